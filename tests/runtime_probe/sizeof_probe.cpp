// Prints "name size alignment" for every type the runtime allocates from the
// method pool while it loads a method (executorch 1.5.x's Method::init and
// the tensor parser), compiled with the installed wheel's headers for the
// host or for a cross target. Types private to method.cpp (Chain,
// BackendDelegate, NamedData) are mirrored member for member from
// runtime/executor/method.cpp and tensor_parser.h; every other type is the
// headers' own. tests/test_device_targets.py compares the output with
// cadence_memplan.device.targets.

#include <executorch/runtime/backend/interface.h>
#include <executorch/runtime/core/evalue.h>
#include <executorch/runtime/core/freeable_buffer.h>
#include <executorch/runtime/core/span.h>
#include <executorch/runtime/kernel/operator_registry.h>

#include <cstdio>
#include <optional>

namespace rt = executorch::runtime;
using executorch::aten::ArrayRef;
using executorch::aten::Tensor;

namespace mirrored {
// method.cpp's Chain: the flatbuffer chain, the argument lists, the kernels.
struct Chain {
  const void* s_chain;
  rt::Span<rt::Span<rt::EValue*>> argument_lists;
  rt::OpFunction* kernels;
};
// method.cpp's BackendDelegate: the processed data, the backend, the handle.
struct BackendDelegate {
  rt::FreeableBuffer segment;
  const void* backend;
  void* handle;
};
// tensor_parser.h's NamedData: a key and its buffer.
struct NamedData {
  const char* key;
  rt::FreeableBuffer buffer;
};
}  // namespace mirrored

#define SHOW(name, type) \
  std::printf("%s %zu %zu\n", name, sizeof(type), alignof(type))

int main() {
  SHOW("evalue", rt::EValue);
  SHOW("pointer", void*);
  SHOW("tensor_impl", executorch::runtime::etensor::TensorImpl);
  SHOW("tensor", Tensor);
  SHOW("optional_tensor", std::optional<Tensor>);
  SHOW("tensor_meta", rt::TensorMeta);
  SHOW("boxed_int_list", rt::BoxedEvalueList<int64_t>);
  SHOW("boxed_tensor_list", rt::BoxedEvalueList<Tensor>);
  SHOW("boxed_optional_tensor_list",
       rt::BoxedEvalueList<std::optional<Tensor>>);
  SHOW("array_ref", ArrayRef<double>);
  SHOW("int64", int64_t);
  SHOW("sizes_type", executorch::aten::SizesType);
  SHOW("strides_type", executorch::aten::StridesType);
  SHOW("dim_order_type", executorch::aten::DimOrderType);
  SHOW("op_function", rt::OpFunction);
  SHOW("instruction_args", rt::Span<rt::EValue*>);
  SHOW("chain", mirrored::Chain);
  SHOW("backend_delegate", mirrored::BackendDelegate);
  SHOW("compile_spec", rt::CompileSpec);
  SHOW("named_data", mirrored::NamedData);
  return 0;
}
