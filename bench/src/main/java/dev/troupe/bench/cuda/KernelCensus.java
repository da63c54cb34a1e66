package dev.troupe.bench.cuda;

import dev.troupe.engine.DeviceSampling;
import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.ModelRunner.SequenceChunk;
import dev.troupe.engine.cuda.CudaModelRunner;
import dev.troupe.engine.cuda.CudaProbe;
import dev.troupe.engine.cuda.ForwardingGpu;
import dev.troupe.engine.cuda.Gpu;
import dev.troupe.engine.model.ModelConfigs;
import dev.troupe.engine.model.SafetensorsWeights;
import dev.troupe.engine.model.WeightSource;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;

/**
 * Where a decode step's GPU time goes (docs/benchmarks.md, "GPU"): the CUDA runner's decode step at
 * a batch size, its kernel launches and cuBLAS products recorded as it runs them (eagerly), then
 * each call timed alone — captured {@value #REPS} times in a row into a CUDA graph and the graph
 * replayed, so a call's time is what it costs inside a replayed step, gaps between kernels
 * included, without the host's launch cost. Calls are grouped by kernel (products by shape), with
 * the bytes of weights a product reads turned into GB/s. The sum is set beside the step's own time
 * replayed from its graph, which it should approach.
 *
 * <p>Then {@code sample_rows} alone once more with top-k 20 and top-p 0.95 (Qwen3's {@code
 * generation_config} defaults, which a served Qwen3 applies unless a request sets them).
 *
 * <p>Usage: {@code KernelCensus MODEL_DIR [context] [batch...]} (defaults 160; 1 256). Replaying a
 * call repeats its side effects (the residual add of {@code add_rmsnorm}), so the runner's state is
 * garbage afterwards: a bench only, on a random-weight model.
 */
public final class KernelCensus {
  private KernelCensus() {}

  static final int REPS = 20;

  /** One recorded call: a label to group by, the bytes of weights it reads, and how to redo it. */
  private record Call(String label, long weightBytes, Runnable redo) {}

  /** {@link Gpu} that passes everything on, noting launches and products while recording. */
  private static final class Recording extends ForwardingGpu {
    final List<Call> calls = new ArrayList<>();
    boolean recording;

    Recording(Gpu g) {
      super(g);
    }

    private void note(String label, long weightBytes, Runnable redo) {
      if (recording) calls.add(new Call(label, weightBytes, redo));
      redo.run();
    }

    @Override
    public void launch(String kernel, int gridX, int gridY, int threads, Object... args) {
      note(
          String.format(Locale.ROOT, "%s grid %d×%d×%d", kernel, gridX, gridY, threads),
          0,
          () -> gpu.launch(kernel, gridX, gridY, threads, args));
    }

    @Override
    public void matmul(Product p) {
      // the forward's products: x [m, k] times w [n, k]ᵀ; w's bytes are what a decode step streams
      note(
          String.format(
              Locale.ROOT,
              "product %d×%d, %d rows%s",
              p.n(),
              p.k(),
              p.m(),
              p.cBf16() ? ", bf16 out" : ""),
          2L * p.n() * p.k(),
          () -> gpu.matmul(p));
    }

    @Override
    public void matmulBatched(Product p, Strides s) {
      note(
          String.format(
              Locale.ROOT, "batched product %d×%d×%d ×%d", p.m(), p.n(), p.k(), s.batch()),
          0,
          () -> gpu.matmulBatched(p, s));
    }
  }

  public static void main(String[] args) {
    if (args.length < 1) {
      System.err.println("usage: KernelCensus MODEL_DIR [context] [batch...]");
      System.exit(2);
    }
    Path dir = Path.of(args[0]);
    int context = args.length > 1 ? Integer.parseInt(args[1]) : 160;
    int[] batches =
        args.length > 2
            ? Arrays.stream(args, 2, args.length).mapToInt(Integer::parseInt).toArray()
            : new int[] {1, 256};
    int ordinal = CudaBench.firstUsable(CudaProbe.get());
    double copyGBs;
    try (Gpu g = CudaProbe.open(ordinal)) {
      copyGBs = CudaBench.copyBandwidth(g);
    }
    ModelConfig cfg = ModelConfigs.read(dir);
    int bs = 16, blocksPerSeq = (context + 64) / bs + 1;
    int maxB = Arrays.stream(batches).max().getAsInt();
    Recording gpu = new Recording(CudaProbe.open(ordinal));
    CudaModelRunner r;
    try (WeightSource w = SafetensorsWeights.open(dir)) {
      r = CudaModelRunner.load(gpu, cfg, w, bs, maxB * blocksPerSeq, 0, Math.max(256, maxB));
    }
    System.out.printf(
        Locale.ROOT,
        "%s; %s: %d layers; device-to-device copy %.0f GB/s (read + write)%n",
        r.device(),
        dir,
        cfg.numLayers(),
        copyGBs);
    Random rnd = new Random(1);
    for (int b : batches) {
      List<int[]> tables = new ArrayList<>();
      for (int s = 0; s < b; s++) {
        int[] t = new int[blocksPerSeq];
        for (int i = 0; i < t.length; i++) t[i] = s * blocksPerSeq + i;
        tables.add(t);
      }
      // the step as served: replayed from its graph (the first step captures it), median of 20
      r.useCudaGraphs(true);
      double[] stepMs = new double[20];
      for (int i = -2; i < stepMs.length; i++) {
        long a = System.nanoTime();
        step(r, cfg, b, tables, context, rnd, 0, 1f);
        if (i >= 0) stepMs[i] = (System.nanoTime() - a) / 1e6;
      }
      Arrays.sort(stepMs);
      // one eager step recorded, then every call timed alone
      r.useCudaGraphs(false);
      gpu.calls.clear();
      gpu.recording = true;
      step(r, cfg, b, tables, context, rnd, 0, 1f);
      gpu.recording = false;
      Map<String, double[]> byLabel = new LinkedHashMap<>(); // {calls, µs, weight bytes}
      double total = 0;
      for (Call c : gpu.calls) {
        double us = time(gpu, c.redo());
        total += us;
        double[] s = byLabel.computeIfAbsent(c.label(), k -> new double[3]);
        s[0]++;
        s[1] += us;
        s[2] += c.weightBytes();
      }
      System.out.printf(
          Locale.ROOT,
          "%nbatch %d, context %d: step replayed from its graph %.3f ms (median of 20); "
              + "%d calls timed alone sum to %.3f ms%n",
          b,
          context,
          stepMs[stepMs.length / 2],
          gpu.calls.size(),
          total / 1000);
      System.out.println("| call | per step | µs each | µs per step | share | weights GB/s |");
      System.out.println("|---|---|---|---|---|---|");
      double sum = total;
      byLabel.entrySet().stream()
          .sorted((x, y) -> Double.compare(y.getValue()[1], x.getValue()[1]))
          .forEach(
              e -> {
                double[] s = e.getValue();
                System.out.printf(
                    Locale.ROOT,
                    "| %s | %.0f | %.1f | %.1f | %.1f%% | %s |%n",
                    e.getKey(),
                    s[0],
                    s[1] / s[0],
                    s[1],
                    100 * s[1] / sum,
                    s[2] > 0 ? String.format(Locale.ROOT, "%.0f", s[2] / (s[1] * 1e3)) : "");
              });
      // the sampler again with Qwen3's generation_config defaults (top_k 20, top_p 0.95), which a
      // served Qwen3 model applies to every request that does not set them
      gpu.calls.clear();
      gpu.recording = true;
      step(r, cfg, b, tables, context, rnd, 20, 0.95f);
      gpu.recording = false;
      for (Call c : gpu.calls)
        if (c.label().startsWith("sample_rows"))
          System.out.printf(
              Locale.ROOT,
              "%s with top_k 20, top_p 0.95: %.1f µs%n",
              c.label(),
              time(gpu, c.redo()));
    }
    r.close();
  }

  /**
   * One decode step of {@code b} sequences at position {@code pos}, sampled on the device at
   * temperature 1 over the whole vocabulary ({@code topK} 0, {@code topP} 1) or with a top-k and a
   * top-p.
   */
  private static void step(
      CudaModelRunner r,
      ModelConfig cfg,
      int b,
      List<int[]> tables,
      int pos,
      Random rnd,
      int topK,
      float topP) {
    List<SequenceChunk> d = new ArrayList<>(b);
    List<DeviceSampling.Row> rows = new ArrayList<>(b);
    for (int s = 0; s < b; s++) {
      d.add(new SequenceChunk(new int[] {rnd.nextInt(cfg.vocabSize())}, pos, tables.get(s), false));
      rows.add(
          new DeviceSampling.Row(
              s, DeviceSampling.Params.simple(false, 1f, topK, topP, 0f, rnd.nextDouble())));
    }
    r.forwardSample(d, null, rows);
  }

  /**
   * µs of one call inside a replayed graph: {@link #REPS} copies captured in a row, the graph run
   * once untimed, then the fastest of 5 runs ÷ {@link #REPS}.
   */
  private static double time(Recording gpu, Runnable call) {
    gpu.synchronize();
    gpu.beginCapture();
    for (int i = 0; i < REPS; i++) call.run();
    long graph = gpu.endCapture();
    gpu.launchGraph(graph);
    gpu.synchronize();
    long best = Long.MAX_VALUE;
    for (int i = 0; i < 5; i++) {
      long a = System.nanoTime();
      gpu.launchGraph(graph);
      gpu.synchronize();
      best = Math.min(best, System.nanoTime() - a);
    }
    gpu.destroyGraph(graph);
    return best / 1e3 / REPS;
  }
}
