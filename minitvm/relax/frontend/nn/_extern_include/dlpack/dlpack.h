/* The DLPack tensor structs, as much of them as minitvm's nn.SourceModule passes to C/C++ code
 * (the layout of DLPack v0.8: https://github.com/dmlc/dlpack).  A tensor argument arrives as a
 * DLTensor* describing a CPU array in row-major order (strides is NULL). */
#ifndef MINITVM_DLPACK_H_
#define MINITVM_DLPACK_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { kDLCPU = 1 } DLDeviceType;

typedef struct {
  DLDeviceType device_type;
  int32_t device_id;
} DLDevice;

typedef enum { kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLBfloat = 4, kDLBool = 6 } DLDataTypeCode;

typedef struct {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
} DLDataType;

typedef struct {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
} DLTensor;

#ifdef __cplusplus
}
#endif
#endif /* MINITVM_DLPACK_H_ */
