// CPU emulation of gert::TilingData (public CANN "basic data structures"): the raw buffer a
// tiling function writes the kernel's tiling data into, with its capacity and the size used.
#ifndef LSG_EMU_GERT_TILING_DATA_H
#define LSG_EMU_GERT_TILING_DATA_H

#include <cstddef>
#include <cstdint>

#include "graph/types.h"

namespace gert {

class TilingData {
public:
    TilingData(const TilingData&) = delete;
    TilingData& operator=(const TilingData&) = delete;

    void* GetData() { return data_; }
    const void* GetData() const { return data_; }
    size_t GetCapacity() const { return capacity_; }
    size_t GetDataSize() const { return size_; }
    // The size the tiling function used; more than the capacity is refused (and not recorded).
    ge::graphStatus SetDataSize(size_t size) {
        if (size > capacity_) return ge::GRAPH_FAILED;
        size_ = size;
        return ge::GRAPH_SUCCESS;
    }

    // -- emulation only: a view of a buffer the emulated framework owns.
    TilingData(void* data, size_t capacity) : data_(data), capacity_(capacity) {}

private:
    void* data_;
    size_t capacity_;
    size_t size_ = 0;
};

}  // namespace gert

#endif  // LSG_EMU_GERT_TILING_DATA_H
