/* minitvm's stand-in for TVM's <tvm/ffi/function.h>: only the export macro an nn.SourceModule needs.
 * TVM_FFI_DLL_EXPORT_TYPED_FUNC(name, impl) exports an accessor, __minitvm_ffi_ptr_<name>, returning
 * the address of impl; minitvm calls impl with DLTensor* for tensors, int64_t for ints and double for
 * floats, in the order of the call (inputs, then the outputs to fill).  impl returns 0 on success
 * (a non-zero int is reported as an error) or void. */
#ifndef MINITVM_TVM_FFI_FUNCTION_H_
#define MINITVM_TVM_FFI_FUNCTION_H_

#include <dlpack/dlpack.h>

#ifdef __cplusplus
#define TVM_FFI_DLL_EXPORT_TYPED_FUNC(ExportName, Function) \
  extern "C" void* __minitvm_ffi_ptr_##ExportName(void) { return reinterpret_cast<void*>(+(Function)); }
#else
#define TVM_FFI_DLL_EXPORT_TYPED_FUNC(ExportName, Function) \
  void* __minitvm_ffi_ptr_##ExportName(void) { return (void*)(Function); }
#endif

#endif /* MINITVM_TVM_FFI_FUNCTION_H_ */
