# Cross compiling op/ for x86_64 Linux with Debian's toolchain, on an aarch64 machine:
#   apt-get install g++-x86-64-linux-gnu   (x86_64-linux-gnu-g++, sysroot /usr/x86_64-linux-gnu)
#   cmake -S op -B build/x -DCMAKE_TOOLCHAIN_FILE=op/cmake/x86_64-linux-gnu.cmake
# farm/pool/build/cmake.py passes it for `farm build --arch x86_64` (with the compiler's path as
# CMAKE_CXX_COMPILER). Its programs run here under qemu user-mode emulation (apt-get install
# qemu-user): qemu-x86_64 -L /usr/x86_64-linux-gnu PROGRAM (op/README.md). Nothing of this file
# reaches the binaries: the same sources give the same bytes, as in a native build.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(LSG_CROSS_TRIPLE x86_64-linux-gnu)
if(NOT CMAKE_CXX_COMPILER)
  set(CMAKE_CXX_COMPILER ${LSG_CROSS_TRIPLE}-g++)
endif()
# Headers and libraries from the sysroot only; programs (cmake's own tools) from this machine.
set(CMAKE_FIND_ROOT_PATH /usr/${LSG_CROSS_TRIPLE})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# What runs an x86_64 program here (try_run, CTest).
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-x86_64 -L /usr/${LSG_CROSS_TRIPLE})
