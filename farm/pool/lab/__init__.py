"""The SSH lab: OpenSSH servers on 127.0.0.x posing as Atlas hosts of both families, to try the
farm on (`farm lab up`). core: the Lab; layout: its hosts; sshd and processes: its servers and
what runs under them; cann_install, cann_toolchain and npu_smi: the stand-ins of CANN, its
toolchain and npu-smi; command: `farm lab`."""
