// Records the size and alignment of every type the runtime allocates from the
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

#include <optional>
#include <utility>

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

// Each figure is the size of a global array, read back from the object file's
// symbol table (readelf -s), so a cross-compiled probe needs no emulator.
#define SHOW(name, type)                      \
  extern "C" char probe_size_##name[sizeof(type)]; \
  char probe_size_##name[sizeof(type)];            \
  extern "C" char probe_align_##name[alignof(type)]; \
  char probe_align_##name[alignof(type)]

SHOW(evalue, rt::EValue);
SHOW(pointer, void*);
SHOW(tensor_impl, executorch::runtime::etensor::TensorImpl);
SHOW(tensor, Tensor);
SHOW(optional_tensor, std::optional<Tensor>);
SHOW(tensor_meta, rt::TensorMeta);
using BoxedInts = rt::BoxedEvalueList<int64_t>;
SHOW(boxed_list, BoxedInts);
using BoxedTensors = rt::BoxedEvalueList<Tensor>;
SHOW(boxed_tensor_list, BoxedTensors);
using BoxedOptionalTensors = rt::BoxedEvalueList<std::optional<Tensor>>;
SHOW(boxed_optional_tensor_list, BoxedOptionalTensors);
SHOW(array_ref, ArrayRef<double>);
SHOW(int64, int64_t);
SHOW(sizes_type, executorch::aten::SizesType);
SHOW(strides_type, executorch::aten::StridesType);
SHOW(dim_order_type, executorch::aten::DimOrderType);
SHOW(op_function, rt::OpFunction);
SHOW(instruction_args, rt::Span<rt::EValue*>);
SHOW(chain, mirrored::Chain);
SHOW(backend_delegate, mirrored::BackendDelegate);
SHOW(compile_spec, rt::CompileSpec);
SHOW(named_data, mirrored::NamedData);
// topk's queue entry: std::pair<CTYPE, int64_t>, largest for an 8-byte CTYPE.
using TopkEntry = std::pair<double, int64_t>;
SHOW(topk_queue_entry, TopkEntry);
