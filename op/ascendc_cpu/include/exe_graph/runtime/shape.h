// CPU emulation of gert::Shape and gert::StorageShape (public CANN "basic data structures"):
// a shape of at most kMaxDimNum extents, and a tensor's origin and storage shapes.
#ifndef LSG_EMU_GERT_SHAPE_H
#define LSG_EMU_GERT_SHAPE_H

#include <cstddef>
#include <cstdint>
#include <initializer_list>

namespace gert {

class Shape {
public:
    static constexpr size_t kMaxDimNum = 25;

    Shape() = default;
    Shape(std::initializer_list<int64_t> dims) {
        for (int64_t d : dims) AppendDim(d);
    }

    size_t GetDimNum() const { return dim_num_; }
    void SetDimNum(size_t n) { dim_num_ = n > kMaxDimNum ? kMaxDimNum : n; }
    int64_t GetDim(size_t index) const { return index < dim_num_ ? dims_[index] : 0; }
    void SetDim(size_t index, int64_t value) {
        if (index < dim_num_) dims_[index] = value;
    }
    Shape& AppendDim(int64_t value) {
        if (dim_num_ < kMaxDimNum) dims_[dim_num_++] = value;
        return *this;
    }
    bool IsScalar() const { return dim_num_ == 0; }
    int64_t GetShapeSize() const {
        int64_t n = 1;
        for (size_t i = 0; i < dim_num_; ++i) n *= dims_[i];
        return n;
    }
    bool operator==(const Shape& other) const {
        if (dim_num_ != other.dim_num_) return false;
        for (size_t i = 0; i < dim_num_; ++i)
            if (dims_[i] != other.dims_[i]) return false;
        return true;
    }
    bool operator!=(const Shape& other) const { return !(*this == other); }

private:
    size_t dim_num_ = 0;
    int64_t dims_[kMaxDimNum] = {};
};

class StorageShape {
public:
    StorageShape() = default;
    StorageShape(std::initializer_list<int64_t> origin, std::initializer_list<int64_t> storage)
        : origin_(origin), storage_(storage) {}
    StorageShape(const Shape& origin, const Shape& storage) : origin_(origin), storage_(storage) {}

    const Shape& GetOriginShape() const { return origin_; }
    const Shape& GetStorageShape() const { return storage_; }
    Shape& MutableOriginShape() { return origin_; }
    Shape& MutableStorageShape() { return storage_; }

private:
    Shape origin_;
    Shape storage_;
};

}  // namespace gert

#endif  // LSG_EMU_GERT_SHAPE_H
