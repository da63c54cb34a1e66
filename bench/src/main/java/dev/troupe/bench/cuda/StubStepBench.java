package dev.troupe.bench.cuda;

import dev.troupe.engine.cuda.StubStepCost;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The CUDA runner's host cost per decode step, without a GPU (docs/benchmarks.md, "Host cost per
 * decode step"): the real runner and {@code CudaGpu}, through the JavaCPP bindings, against the
 * test suite's stand-in driver and cuBLAS in counting mode ({@link StubStepCost}): device calls do
 * nothing, so a step's time is the host's (Java, JNI, the bindings: the runner thread's CPU time,
 * steadier than wall time on a shared machine) and the stand-ins count the driver and cuBLAS calls.
 * What the real driver and cuBLAS spend inside those calls is not in it. Each batch size twice:
 * steps replayed from CUDA graphs (the default) and launched eagerly ({@code --enforce-eager}).
 *
 * <p>Usage: {@code StubStepBench [shape] [warmup-steps] [steps] [batch...]}; defaults {@code
 * qwen3-1.7b 300 300 1 32 256} (zero weights in the stand-in's host memory: 3.4 GB for that shape).
 * Needs gcc (the stand-ins are built on the fly).
 */
public final class StubStepBench {
  private StubStepBench() {}

  public static void main(String[] args) throws Exception {
    String shape = args.length > 0 ? args[0] : "qwen3-1.7b";
    int warmup = args.length > 1 ? Integer.parseInt(args[1]) : 300;
    int steps = args.length > 2 ? Integer.parseInt(args[2]) : 300;
    List<Integer> batches =
        args.length > 3
            ? Arrays.stream(args, 3, args.length).map(Integer::valueOf).toList()
            : List.of(1, 32, 256);
    Path work = Files.createTempDirectory("troupe-stub-step");
    int layers = StubStepCost.shape(shape).numLayers();
    System.out.printf(
        Locale.ROOT,
        "%s (%d layers), stand-in driver: %d decode steps per batch after %d warm-up steps%n",
        shape,
        layers,
        steps,
        warmup);
    System.out.println(
        "| batch | steps | host CPU µs per step (median) | wall µs (median) | driver + cuBLAS calls per step | of which |");
    System.out.println("|---|---|---|---|---|---|");
    for (boolean graphs : new boolean[] {true, false})
      for (StubStepCost.Result r :
          StubStepCost.measure(shape, warmup, steps, work.resolve("" + graphs), batches, graphs)) {
        StringBuilder which = new StringBuilder();
        for (Map.Entry<String, Double> e : r.callsPerStep().entrySet())
          which.append(String.format(Locale.ROOT, "%s %.0f, ", e.getKey(), e.getValue()));
        System.out.printf(
            Locale.ROOT,
            "| %d | %s | %.1f | %.1f | %.0f | %s |%n",
            r.batch(),
            graphs ? "graphs" : "eager",
            r.cpuMicros(),
            r.wallMicros(),
            r.totalCalls(),
            which.length() > 2 ? which.substring(0, which.length() - 2) : "");
      }
  }
}
