package dev.troupe.engine.cuda;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

/**
 * The forked JVM of {@link NvrtcCompileTest}: compiles every shape's kernels with NVRTC (the
 * runner's own {@link Nvrtc}, with ptxas's report) for each architecture given, writing {@code
 * OUT/<shape>-<arch>.log} and {@code .cubin}.
 */
final class NvrtcCompileRun {
  private NvrtcCompileRun() {}

  public static void main(String[] args) throws Exception {
    Path out = Path.of(args[0]);
    System.out.println("NVRTC " + Nvrtc.version());
    for (Map.Entry<String, dev.troupe.engine.ModelConfig> e : KernelShapes.all().entrySet())
      for (int i = 1; i < args.length; i++) {
        String arch = args[i];
        long t0 = System.nanoTime();
        Nvrtc.Output o =
            Nvrtc.compile(
                KernelSource.generate(e.getValue(), 16), arch, "--ptxas-options=--verbose");
        Files.writeString(out.resolve(e.getKey() + "-" + arch + ".log"), o.log());
        Files.write(out.resolve(e.getKey() + "-" + arch + ".cubin"), o.cubin());
        System.out.printf(
            "%s %s: %d bytes in %d ms%n",
            e.getKey(), arch, o.cubin().length, (System.nanoTime() - t0) / 1_000_000);
      }
  }
}
