# lit configuration for minijit's golden tests: `.mj` files whose RUN lines
# drive the minijit tool and check its output with FileCheck.
import os
import lit.formats

config.name = "minijit"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mj"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(os.path.dirname(config.minijit_bin_dir), "tests", "lit")
config.excludes = ["lit.cfg.py", "lit.site.cfg.py.in"]

config.substitutions.append(("%minijit", os.path.join(config.minijit_bin_dir, "minijit")))
config.substitutions.append(("FileCheck", config.filecheck))
config.substitutions.append(("%samples", os.path.join(config.minijit_src_root, "samples")))
config.substitutions.append(("%bench", os.path.join(config.minijit_src_root, "bench")))
# lit passes ASAN_OPTIONS, UBSAN_OPTIONS and LSAN_OPTIONS on by itself, but
# not TSAN_OPTIONS: without it a ThreadSanitizer build (scripts/sanitize.sh
# thread) runs the tools without tests/sanitizer/tsan.supp and fails on
# reports from inside NVRTC, which is not instrumented.
for var in ("MINIJIT_CACHE_DIR", "HOME", "TSAN_OPTIONS"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
