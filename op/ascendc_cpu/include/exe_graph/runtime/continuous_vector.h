// CPU emulation of gert::ContinuousVector (public CANN "basic data structures"): a vector whose
// elements follow its header in one allocation, as list attributes reach a tiling function.
#ifndef LSG_EMU_GERT_CONTINUOUS_VECTOR_H
#define LSG_EMU_GERT_CONTINUOUS_VECTOR_H

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>

namespace gert {

class ContinuousVector {
public:
    // A vector with room for `capacity` elements of T, in one block the holder owns.
    template <typename T>
    static std::unique_ptr<uint8_t[]> Create(size_t capacity) {
        const size_t bytes = sizeof(ContinuousVector) + capacity * sizeof(T);
        std::unique_ptr<uint8_t[]> holder(new uint8_t[bytes]());
        auto* v = new (holder.get()) ContinuousVector();
        v->capacity_ = capacity;
        v->size_ = 0;
        return holder;
    }

    size_t GetSize() const { return size_; }
    size_t GetCapacity() const { return capacity_; }
    // Fails (returns false) beyond the capacity.
    bool SetSize(size_t size) {
        if (size > capacity_) return false;
        size_ = size;
        return true;
    }
    const void* GetData() const { return data_; }
    void* MutableData() { return data_; }

private:
    ContinuousVector() = default;
    size_t capacity_ = 0;
    size_t size_ = 0;
    alignas(8) uint8_t data_[8];  // the elements start here and run past the object
};

}  // namespace gert

#endif  // LSG_EMU_GERT_CONTINUOUS_VECTOR_H
