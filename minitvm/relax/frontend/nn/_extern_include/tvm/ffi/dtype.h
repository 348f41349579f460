/* minitvm's stand-in for TVM's <tvm/ffi/dtype.h>: the DLPack dtype struct is all it provides. */
#ifndef MINITVM_TVM_FFI_DTYPE_H_
#define MINITVM_TVM_FFI_DTYPE_H_
#include <dlpack/dlpack.h>
#endif /* MINITVM_TVM_FFI_DTYPE_H_ */
