// Loads one method of a .pte with a method pool and a temp pool of exact
// sizes, reports each pool's high-water mark, runs the method on inputs read
// from a file and writes its outputs, so that a test can compare them with
// the Python runtime's. Built by tests/device_runner.py against the installed
// executorch wheel's headers and libraries.
//
// usage: pool_runner PTE METHOD METHOD_POOL TEMP_POOL INPUTS OUTPUTS [SKEW]
//   METHOD_POOL, TEMP_POOL: bytes; each pool starts at a 64-byte aligned
//   address plus SKEW bytes (default 0).
//   INPUTS: per input tensor, int32 rank, int32 sizes[rank], the raw bytes.
//   OUTPUTS: per output, int32 rank (-1: not a tensor), int32 sizes[rank],
//   int32 scalar type, int64 byte count, the raw bytes.
// stdout: "load <error code>" then, when it loaded, "method_high <bytes>",
// "temp_load_high <bytes>", "run <error code>", "temp_run_high <bytes>".
// Exit code 0 when the method loaded and ran, 3 when a step failed cleanly.

#include <executorch/extension/data_loader/file_data_loader.h>
#include <executorch/runtime/core/memory_allocator.h>
#include <executorch/runtime/executor/method.h>
#include <executorch/runtime/executor/program.h>
#include <executorch/runtime/platform/runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <vector>

using executorch::aten::ScalarType;
using executorch::aten::SizesType;
using executorch::extension::FileDataLoader;
using executorch::runtime::Error;
using executorch::runtime::EValue;
using executorch::runtime::HierarchicalAllocator;
using executorch::runtime::MemoryAllocator;
using executorch::runtime::MemoryManager;
using executorch::runtime::Method;
using executorch::runtime::Program;
using executorch::runtime::Span;
using executorch::runtime::etensor::TensorImpl;

namespace {

// A MemoryAllocator that remembers the most it ever had in use.
class CountingAllocator : public MemoryAllocator {
 public:
  CountingAllocator(uint32_t size, uint8_t* base)
      : MemoryAllocator(size, base) {}
  void* allocate(size_t size, size_t alignment) override {
    void* result = MemoryAllocator::allocate(size, alignment);
    if (result != nullptr && used_size() > high_) {
      high_ = used_size();
    }
    return result;
  }
  size_t high() const { return high_; }
  void forget_high() { high_ = 0; }

 private:
  size_t high_ = 0;
};

// A buffer of `size` bytes whose first byte sits `skew` bytes past a 64-byte
// boundary; never a null pointer, even for size 0.
struct SkewedBuffer {
  SkewedBuffer(size_t size, size_t skew) : storage(size + skew + 128) {
    uintptr_t start = reinterpret_cast<uintptr_t>(storage.data());
    uintptr_t aligned = (start + 63) & ~static_cast<uintptr_t>(63);
    data = reinterpret_cast<uint8_t*>(aligned + skew);
  }
  std::vector<uint8_t> storage;
  uint8_t* data;
};

bool read_exact(std::ifstream& in, void* out, size_t n) {
  in.read(static_cast<char*>(out), static_cast<std::streamsize>(n));
  return static_cast<size_t>(in.gcount()) == n;
}

// The inputs as tensors whose storage the caller keeps alive.
struct InputTensor {
  std::vector<SizesType> sizes;
  std::vector<uint8_t> bytes;
  std::unique_ptr<TensorImpl> impl;
};

bool set_inputs(Method& method, const char* path,
                std::vector<InputTensor>& inputs) {
  std::ifstream in(path, std::ios::binary);
  inputs.resize(method.inputs_size());
  for (size_t i = 0; i < method.inputs_size(); ++i) {
    auto meta = method.method_meta().input_tensor_meta(i);
    if (!meta.ok()) {
      std::fprintf(stderr, "input %zu is not a tensor\n", i);
      return false;
    }
    int32_t rank = 0;
    if (!read_exact(in, &rank, sizeof(rank)) || rank < 0 || rank > 16) {
      return false;
    }
    InputTensor& input = inputs[i];
    input.sizes.resize(static_cast<size_t>(rank));
    size_t count = 1;
    for (auto& size : input.sizes) {
      int32_t value = 0;
      if (!read_exact(in, &value, sizeof(value))) return false;
      size = value;
      count *= static_cast<size_t>(value);
    }
    ScalarType dtype = meta->scalar_type();
    input.bytes.resize(count * executorch::runtime::elementSize(dtype) + 1);
    if (!read_exact(in, input.bytes.data(), input.bytes.size() - 1)) {
      return false;
    }
    input.impl = std::make_unique<TensorImpl>(
        dtype, rank, input.sizes.data(), input.bytes.data());
    Error err = method.set_input(
        EValue(executorch::aten::Tensor(input.impl.get())), i);
    if (err != Error::Ok) {
      std::fprintf(stderr, "set_input %zu: 0x%x\n", i,
                   static_cast<unsigned>(err));
      return false;
    }
  }
  return true;
}

void write_outputs(const Method& method, const char* path) {
  std::ofstream out(path, std::ios::binary);
  for (size_t i = 0; i < method.outputs_size(); ++i) {
    const EValue& value = method.get_output(i);
    if (!value.isTensor()) {
      int32_t rank = -1;
      out.write(reinterpret_cast<const char*>(&rank), sizeof(rank));
      continue;
    }
    const auto tensor = value.toTensor();
    int32_t rank = static_cast<int32_t>(tensor.dim());
    out.write(reinterpret_cast<const char*>(&rank), sizeof(rank));
    for (int32_t d = 0; d < rank; ++d) {
      int32_t size = static_cast<int32_t>(tensor.size(d));
      out.write(reinterpret_cast<const char*>(&size), sizeof(size));
    }
    int32_t dtype = static_cast<int32_t>(tensor.scalar_type());
    int64_t nbytes = static_cast<int64_t>(tensor.nbytes());
    out.write(reinterpret_cast<const char*>(&dtype), sizeof(dtype));
    out.write(reinterpret_cast<const char*>(&nbytes), sizeof(nbytes));
    out.write(tensor.const_data_ptr<char>(), nbytes);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 7) {
    std::fprintf(stderr,
                 "usage: %s PTE METHOD METHOD_POOL TEMP_POOL INPUTS OUTPUTS "
                 "[SKEW]\n",
                 argv[0]);
    return 64;
  }
  executorch::runtime::runtime_init();
  const size_t method_pool = std::strtoull(argv[3], nullptr, 10);
  const size_t temp_pool = std::strtoull(argv[4], nullptr, 10);
  const size_t skew = argc > 7 ? std::strtoull(argv[7], nullptr, 10) : 0;

  auto loader = FileDataLoader::from(argv[1]);
  if (!loader.ok()) return 65;
  auto program = Program::load(&loader.get());
  if (!program.ok()) return 65;
  auto meta = program->method_meta(argv[2]);
  if (!meta.ok()) return 65;

  std::vector<std::unique_ptr<SkewedBuffer>> planned_buffers;
  std::vector<Span<uint8_t>> planned_spans;
  for (size_t id = 0; id < meta->num_memory_planned_buffers(); ++id) {
    size_t size = static_cast<size_t>(meta->memory_planned_buffer_size(id).get());
    planned_buffers.push_back(std::make_unique<SkewedBuffer>(size, 0));
    planned_spans.emplace_back(planned_buffers.back()->data, size);
  }
  HierarchicalAllocator planned({planned_spans.data(), planned_spans.size()});

  SkewedBuffer method_buffer(method_pool, skew);
  SkewedBuffer temp_buffer(temp_pool, skew);
  CountingAllocator method_allocator(static_cast<uint32_t>(method_pool),
                                     method_buffer.data);
  CountingAllocator temp_allocator(static_cast<uint32_t>(temp_pool),
                                   temp_buffer.data);
  MemoryManager memory_manager(&method_allocator, &planned, &temp_allocator);

  auto method = program->load_method(argv[2], &memory_manager);
  std::printf("load %u\n", static_cast<unsigned>(method.error()));
  if (!method.ok()) return 3;
  std::printf("method_high %zu\n", method_allocator.high());
  std::printf("temp_load_high %zu\n", temp_allocator.high());
  temp_allocator.forget_high();

  std::vector<InputTensor> inputs;
  if (!set_inputs(*method, argv[5], inputs)) return 66;
  Error err = method->execute();
  std::printf("run %u\n", static_cast<unsigned>(err));
  std::printf("temp_run_high %zu\n", temp_allocator.high());
  std::printf("method_after_run %zu\n", method_allocator.high());
  if (err != Error::Ok) return 3;
  write_outputs(*method, argv[6]);
  return 0;
}
