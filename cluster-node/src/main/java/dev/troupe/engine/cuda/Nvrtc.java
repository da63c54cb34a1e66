package dev.troupe.engine.cuda;

import static org.bytedeco.cuda.global.nvrtc.nvrtcCompileProgram;
import static org.bytedeco.cuda.global.nvrtc.nvrtcCreateProgram;
import static org.bytedeco.cuda.global.nvrtc.nvrtcDestroyProgram;
import static org.bytedeco.cuda.global.nvrtc.nvrtcGetCUBIN;
import static org.bytedeco.cuda.global.nvrtc.nvrtcGetCUBINSize;
import static org.bytedeco.cuda.global.nvrtc.nvrtcGetErrorString;
import static org.bytedeco.cuda.global.nvrtc.nvrtcGetProgramLog;
import static org.bytedeco.cuda.global.nvrtc.nvrtcGetProgramLogSize;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.bytedeco.cuda.nvrtc._nvrtcProgram;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.PointerPointer;
import org.bytedeco.javacpp.SizeTPointer;

/**
 * NVRTC: CUDA C source to machine code (a cubin, no PTX left for the driver to compile) for one
 * architecture, without headers ({@code -default-device}: every function is device code unless
 * marked). Needs no GPU: the tests compile every kernel for sm_90 and sm_100 with NVRTC 13.1 from
 * Maven Central (NvrtcCompileTest).
 */
final class Nvrtc {
  /** The machine code and NVRTC's log (ptxas's report when asked for with -v). */
  record Output(byte[] cubin, String log) {}

  private Nvrtc() {}

  /** Compiles {@code source} for {@code arch} ({@code sm_90} ...); the log is in any error. */
  static Output compile(String source, String arch, String... extraOptions) {
    _nvrtcProgram prog = new _nvrtcProgram();
    ok(
        nvrtcCreateProgram(
            prog,
            new BytePointer(source),
            new BytePointer("troupe_kernels.cu"),
            0,
            (PointerPointer<?>) null,
            (PointerPointer<?>) null),
        "nvrtcCreateProgram",
        null);
    try {
      List<String> opts =
          new ArrayList<>(List.of("--gpu-architecture=" + arch, "--std=c++17", "-default-device"));
      opts.addAll(List.of(extraOptions));
      int rc =
          nvrtcCompileProgram(
              prog, opts.size(), new PointerPointer<BytePointer>(opts.toArray(String[]::new)));
      String log = programLog(prog);
      if (rc != 0) ok(rc, "NVRTC compile for " + arch, log);
      try (SizeTPointer size = new SizeTPointer(1)) {
        ok(nvrtcGetCUBINSize(prog, size), "nvrtcGetCUBINSize", null);
        byte[] out = new byte[(int) size.get()];
        ok(nvrtcGetCUBIN(prog, out), "nvrtcGetCUBIN", null);
        return new Output(out, log);
      }
    } finally {
      nvrtcDestroyProgram(prog);
    }
  }

  /** NVRTC's version, "major.minor". */
  static String version() {
    int[] major = new int[1], minor = new int[1];
    org.bytedeco.cuda.global.nvrtc.nvrtcVersion(major, minor);
    return major[0] + "." + minor[0];
  }

  private static String programLog(_nvrtcProgram prog) {
    try (SizeTPointer size = new SizeTPointer(1)) {
      if (nvrtcGetProgramLogSize(prog, size) != 0) return "";
      byte[] b = new byte[(int) size.get()];
      nvrtcGetProgramLog(prog, b);
      return new String(b, 0, Math.max(0, b.length - 1), StandardCharsets.UTF_8);
    }
  }

  private static void ok(int rc, String what, String logText) {
    if (rc != 0)
      throw new CudaException(
          what
              + " failed: "
              + nvrtcGetErrorString(rc).getString()
              + (logText == null || logText.isEmpty() ? "" : "\n" + logText));
  }
}
