// The bad-input table (README, "Bad input"): one row per class of bad input, each run through
// the CLI as a user would meet it. Every row must fail with a non-zero exit (not a signal, not
// a timeout), print exactly one line that starts with "staticlm:" and names the file where
// there is one, and contain the row's message. A second test holds README to the same rows,
// so the table and the program cannot drift apart.
#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "runtime/plan/plan_file.h"
#include "tests/support/cli_runner.h"
#include "tests/support/gguf_writer.h"
#include "tests/support/temp_path.h"

namespace staticlm::test {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void Spit(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string AsString(const std::vector<uint8_t>& bytes) {
  return std::string(bytes.begin(), bytes.end());
}

// The files the rows use, made once per test process in its own temporary names.
class BadInputs {
 public:
  BadInputs() {
    good_ = TempPath("good.gguf");
    other_ = TempPath("other.gguf");
    TinyLlamaOptions other;
    other.seed = 2;  // the same shape, other weights: another fingerprint
    EXPECT_TRUE(WriteTinyLlama(good_.c_str()).ok());
    EXPECT_TRUE(WriteTinyLlama(other_.c_str(), other).ok());
  }
  ~BadInputs() {
    for (const std::string& p : made_) std::remove(p.c_str());
    std::remove(good_.c_str());
    std::remove(other_.c_str());
  }

  const std::string& good() const { return good_; }
  const std::string& other() const { return other_; }

  // A file named `name` holding `bytes`.
  std::string File(const std::string& name, const std::string& bytes) {
    std::string path = TempPath(name);
    Spit(path, bytes);
    made_.push_back(path);
    return path;
  }
  // The tiny model with `edit` applied to its writer.
  std::string Model(const std::string& name, const std::function<void(GgufWriter*)>& edit) {
    GgufWriter w;
    EXPECT_TRUE(BuildTinyLlama({}, &w).ok());
    edit(&w);
    return File(name, AsString(w.Serialize()));
  }
  // A scratch path the CLI writes (a session or plan file).
  std::string Scratch(const std::string& name) {
    std::string path = TempPath(name);
    made_.push_back(path);
    return path;
  }

 private:
  std::string good_, other_;
  std::vector<std::string> made_;
};

struct Row {
  const char* input;    // the README's first column
  const char* message;  // what the one line must contain (README's second column)
  // Makes the files and returns the CLI arguments; `file` is set to the path the line must
  // name, or left empty.
  std::function<std::string(BadInputs&, std::string* file)> args;
  long address_space_kib = 0;  // > 0: run under `ulimit -v` (not in sanitizer builds)
};

// `staticlm run` on `model`; the tiny model's context is 256, so the default (2048) is not.
std::string Run(const std::string& model, const std::string& more = "--prompt hi -n 1") {
  return "run --ctx 64 --model " + model + " " + more;
}

std::vector<Row> Rows() {
  return {
      {"empty model file", "not a GGUF file: it is empty",
       [](BadInputs& in, std::string* file) {
         *file = in.File("empty.gguf", "");
         return Run(*file);
       }},
      {"truncated model file", "lies outside the data section",
       [](BadInputs& in, std::string* file) {
         std::string bytes = Slurp(in.good());
         *file = in.File("truncated.gguf", bytes.substr(0, bytes.size() - 4096));
         return Run(*file);
       }},
      {"wrong magic", "not a GGUF file: magic is 0x46554758, expected 0x46554747 (\"GGUF\")",
       [](BadInputs& in, std::string* file) {
         std::string bytes = Slurp(in.good());
         bytes[0] = 'X';
         *file = in.File("magic.gguf", bytes);
         return Run(*file);
       }},
      {"unknown GGUF version", "GGUF version 99 is not supported",
       [](BadInputs& in, std::string* file) {
         *file = in.Model("version.gguf", [](GgufWriter* w) { w->SetVersion(99); });
         return Run(*file);
       }},
      {"a count past the end of the file", "tensor_count 1099511627776 cannot fit in the",
       [](BadInputs& in, std::string* file) {
         std::string bytes = Slurp(in.good());
         const uint64_t huge_tensor_count = uint64_t{1} << 40;
         std::memcpy(&bytes[8], &huge_tensor_count, sizeof(huge_tensor_count));
         *file = in.File("count.gguf", bytes);
         return Run(*file);
       }},
      {"a tensor offset past the end", "lies outside the data section",
       [](BadInputs& in, std::string* file) {
         *file = in.Model("offset.gguf",
                          [](GgufWriter* w) { w->OverrideTensorOffset(0, uint64_t{1} << 30); });
         return Run(*file);
       }},
      {"overlapping tensors", "overlap",
       [](BadInputs& in, std::string* file) {
         *file = in.Model("overlap.gguf", [](GgufWriter* w) { w->OverrideTensorOffset(1, 0); });
         return Run(*file);
       }},
      {"a misaligned tensor", "is not a multiple of the alignment 32",
       [](BadInputs& in, std::string* file) {
         *file = in.Model("misaligned.gguf", [](GgufWriter* w) { w->OverrideTensorOffset(1, 4); });
         return Run(*file);
       }},
      {"a tensor whose size disagrees with its shape and type",
       "ne[0] = 16 is not a multiple of Q4_1's block",
       [](BadInputs& in, std::string* file) {
         *file = in.Model("shape.gguf", [](GgufWriter* w) {
           w->AddTensor("extra", {16, 2}, DType::kQ4_1, std::vector<uint8_t>(20, 0));
         });
         return Run(*file);
       }},
      {"an unknown architecture", "general.architecture = 'mamba' is not supported (supported: ",
       [](BadInputs& in, std::string* file) {
         GgufWriter w;
         w.AddString("general.architecture", "mamba");
         w.AddTensor("weight", {8}, DType::kF32, std::vector<uint8_t>(32, 0));
         *file = in.File("arch.gguf", AsString(w.Serialize()));
         return Run(*file);
       }},
      {"an unknown tensor type", "has unknown ggml type 200",
       [](BadInputs& in, std::string* file) {
         *file = in.Model("type.gguf", [](GgufWriter* w) {
           w->AddTensor("extra", {8}, static_cast<DType>(200), std::vector<uint8_t>(32, 0));
         });
         return Run(*file);
       }},
      {"a plan file of another model", "was made for another model",
       [](BadInputs& in, std::string* file) {
         *file = in.Scratch("other.plan");
         RunCli("plan --model " + in.other() + " --ctx 64 -o " + *file);
         return Run(in.good(), "--plan " + *file + " --prompt hi -n 1");
       }},
      {"a plan file of another staticlm version", "format version 99",
       [](BadInputs& in, std::string* file) {
         std::string made = in.Scratch("made.plan");
         RunCli("plan --model " + in.good() + " --ctx 64 -o " + made);
         std::string bytes = Slurp(made);
         const uint32_t version = 99;
         if (bytes.size() > 12) std::memcpy(&bytes[8], &version, sizeof(version));
         *file = in.File("version.plan", bytes);
         return Run(in.good(), "--plan " + *file + " --prompt hi -n 1");
       }},
      {"a session of another model", "it was made for another model",
       [](BadInputs& in, std::string* file) {
         *file = in.Scratch("other.session");
         RunCli(Run(in.other(), "--prompt hi -n 2 --save-session " + *file));
         return Run(in.good(), "--load-session " + *file + " -n 1");
       }},
      {"a corrupted session", "it is corrupted (checksum mismatch)",
       [](BadInputs& in, std::string* file) {
         std::string made = in.Scratch("made.session");
         RunCli(Run(in.good(), "--prompt hi -n 2 --save-session " + made));
         std::string bytes = Slurp(made);
         if (!bytes.empty())
           bytes[bytes.size() - 3] = static_cast<char>(bytes[bytes.size() - 3] ^ 1);
         *file = in.File("corrupted.session", bytes);
         return Run(in.good(), "--load-session " + *file + " -n 1");
       }},
      {"a prompt longer than --max-prompt-bytes",
       "the prompt is 21 bytes, more than --max-prompt-bytes 8",
       [](BadInputs& in, std::string*) {
         return Run(in.good(), "--max-prompt-bytes 8 --prompt 'hello there my friend' -n 1");
       }},
      {"a prompt longer than the context", "the prompt is 35 tokens, longer than the context (8)",
       [](BadInputs& in, std::string*) {
         return Run(in.good(),
                    "--ctx 8 --chunk 8 --prompt 'hello there my friend, how are you "
                    "doing on this fine day' -n 1");
       }},
      {"invalid UTF-8 in a prompt", "text is not valid UTF-8",
       [](BadInputs& in, std::string*) {
         return Run(in.good(), "--prompt \"$(printf 'ok \\377')\" -n 1");
       }},
      {"a context larger than the model's", "context 100000 exceeds the model's context length 256",
       [](BadInputs& in, std::string*) { return Run(in.good(), "--ctx 100000"); }},
      {"a context that does not fit the memory",
       "this context needs 1542.2 MiB in all (staticlm inspect with the same limits lists the "
       "parts",
       [](BadInputs&, std::string*) {
         return Run(STATICLM_DEFAULT_MODEL, "--ctx 8192 --batch 8 --prompt hi -n 1");
       },
       600 * 1024},  // the address space holds the model and binary, not the 1.4 GiB KV cache
      {"a model path that does not exist", "cannot open",
       [](BadInputs&, std::string* file) {
         *file = TempPath("missing.gguf");
         return Run(*file);
       }},
      {"a model path that is not a regular file", "is not a regular file",
       [](BadInputs&, std::string* file) {
         *file = "/dev/null";
         return Run(*file);
       }},
  };
}

TEST(BadInputTableTest, EveryRowFailsWithOneLineNamingTheFile) {
  BadInputs inputs;
  for (const Row& row : Rows()) {
    SCOPED_TRACE(row.input);
    std::string file;
    const std::string args = row.args(inputs, &file);
#if defined(STATICLM_SANITIZE)
    if (row.address_space_kib > 0) continue;  // ASan reserves terabytes of shadow address space
#endif
    CliResult r = row.address_space_kib > 0
                      ? RunShell("ulimit -v " + std::to_string(row.address_space_kib) +
                                 " && timeout 120 " STATICLM_CLI " " + args + " </dev/null")
                      : RunCli(args);
    EXPECT_FALSE(r.signaled) << args;
    EXPECT_NE(r.exit_code, 0) << args;
    EXPECT_NE(r.exit_code, 124) << args << ": timed out";
    EXPECT_EQ(r.output.rfind("staticlm: ", 0), 0u) << args << "\n" << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(row.message), std::string::npos)
        << args << "\nexpected: " << row.message << "\nprinted:  " << r.output;
    if (!file.empty()) {
      EXPECT_NE(r.output.find(file), std::string::npos) << r.output;
    }
    std::printf("%-55s %s", row.input, r.output.c_str());
  }
}

TEST(BadInputTableTest, ReadmeListsEveryRow) {
  const std::string readme = Slurp(std::string(STATICLM_GOLDEN_DIR) + "/../../README.md");
  ASSERT_FALSE(readme.empty());
  for (const Row& row : Rows()) {
    EXPECT_NE(readme.find(std::string("| ") + row.input + " |"), std::string::npos) << row.input;
    EXPECT_NE(readme.find(row.message), std::string::npos) << row.message;
  }
}

}  // namespace
}  // namespace staticlm::test
