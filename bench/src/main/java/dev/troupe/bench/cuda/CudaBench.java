package dev.troupe.bench.cuda;

import dev.troupe.engine.DeviceSampling;
import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.ModelRunner.SequenceChunk;
import dev.troupe.engine.cuda.CudaModelRunner;
import dev.troupe.engine.cuda.CudaProbe;
import dev.troupe.engine.cuda.Gpu;
import dev.troupe.engine.model.ModelConfigs;
import dev.troupe.engine.model.SafetensorsWeights;
import dev.troupe.engine.model.TransformerLayout;
import dev.troupe.engine.model.WeightSource;
import dev.troupe.engine.sampling.EosTokens;
import dev.troupe.engine.sampling.LogitsProcessorRegistry;
import dev.troupe.engine.sampling.Sampler;
import dev.troupe.engine.sampling.SamplerFactory;
import dev.troupe.protocol.cluster.SamplingDefaults;
import dev.troupe.protocol.cluster.SamplingParams;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Random;

/**
 * GPU benchmark of the CUDA runner (not a test; docs/benchmarks.md, "GPU"): on a model directory
 * (bench/gpu/make_random_model.py writes random-weight Qwen3-1.7B / Llama-3.1-8B shapes from a
 * seed), prefill tok/s and decode tok/s at batch 1, 8, 32, 128, 256, against the bandwidth limit
 * (BF16 weight bytes per decode step ÷ the device-to-device copy bandwidth measured here), and the
 * host's share of a decode step with device sampling (the step's wall time minus its waits for the
 * device, over the wall time), each with decode steps replayed from CUDA graphs (the default) and
 * launched eagerly ({@code --enforce-eager}), and decode tok/s with the logits copied to the host
 * and sampled there by the CPU {@code Sampler} (what the engine does for rows the device cannot
 * sample; graphs on).
 *
 * <p>Usage: {@code CudaBench MODEL_DIR [prompt-tokens] [decode-steps]}. Prints a table. {@code
 * CudaBench --probe} prints what the CUDA probe found (GPUs, driver, which folder each CUDA library
 * comes from, or what is missing) and exits 0 when a GPU is usable, else 2.
 */
public final class CudaBench {
  private CudaBench() {}

  public static void main(String[] args) {
    if (args.length < 1 || args.length > 3) {
      System.err.println("usage: CudaBench MODEL_DIR [prompt-tokens] [decode-steps] | --probe");
      System.exit(2);
    }
    if (args[0].equals("--probe")) {
      CudaProbe.Result r = CudaProbe.get();
      System.out.println("CUDA probe: " + r.summary());
      System.exit(r.usable() ? 0 : 2);
    }
    Path dir = Path.of(args[0]);
    int prompt = args.length > 1 ? Integer.parseInt(args[1]) : 128;
    int steps = args.length > 2 ? Integer.parseInt(args[2]) : 32;
    int[] batches = {1, 8, 32, 128, 256};
    CudaProbe.Result probe = CudaProbe.get();
    int ordinal = firstUsable(probe);
    double copyGBs;
    try (Gpu g = CudaProbe.open(ordinal)) {
      copyGBs = copyBandwidth(g);
    }
    ModelConfig cfg = ModelConfigs.read(dir);
    long weightBytes = 0;
    try (WeightSource w = SafetensorsWeights.open(dir)) {
      for (var e : TransformerLayout.of(cfg).tensors().entrySet())
        if (!e.getKey().equals(TransformerLayout.EMBED) || cfg.tieWordEmbeddings())
          weightBytes += w.info(e.getKey()).numel() * 2;
    }
    int bs = 16;
    int blocksPerSeq = (prompt + 3 * (steps + 2) + bs) / bs + 1;
    int maxB = batches[batches.length - 1];
    CudaModelRunner r;
    try (WeightSource w = SafetensorsWeights.open(dir)) {
      r = CudaModelRunner.load(CudaProbe.open(ordinal), cfg, w, bs, maxB * blocksPerSeq, 0, 8192);
    }
    System.out.println("CUDA probe: " + probe.summary());
    System.out.printf(
        Locale.ROOT,
        "model %s: rope theta %s, scaling %s%n",
        dir,
        cfg.ropeTheta(),
        cfg.ropeScaling() == null ? "none" : cfg.ropeScaling());
    System.out.printf(
        Locale.ROOT,
        "%s%nmodel %s: %d layers, hidden %d, vocab %d; %.2f GB of BF16 weights read per decode step%n"
            + "device-to-device copy: %.0f GB/s (read + write) → batch-1 decode limit %.1f tok/s%n",
        r.device(),
        dir,
        cfg.numLayers(),
        cfg.hiddenSize(),
        cfg.vocabSize(),
        weightBytes / 1e9,
        copyGBs,
        copyGBs * 1e9 / weightBytes);
    System.out.println(
        "| batch | prefill tok/s | decode tok/s, graphs | step ms, graphs | host share, graphs "
            + "| decode tok/s, eager | step ms, eager | host share, eager "
            + "| decode tok/s, logits to host + CPU sampler |");
    System.out.println("|---|---|---|---|---|---|---|---|---|");
    SamplerFactory samplers =
        new SamplerFactory(cfg.vocabSize(), null, EosTokens.none(), LogitsProcessorRegistry.none());
    SamplingParams random =
        SamplingParams.builder()
            .temperature(1.0)
            .seed(1L)
            .maxTokens(1 << 20)
            .build()
            .withDefaults(SamplingDefaults.NONE);
    Random rnd = new Random(1);
    for (int b : batches) {
      List<int[]> tables = new ArrayList<>();
      List<int[]> prompts = new ArrayList<>();
      for (int s = 0; s < b; s++) {
        int[] t = new int[blocksPerSeq];
        for (int i = 0; i < t.length; i++) t[i] = s * blocksPerSeq + i;
        tables.add(t);
        int[] p = new int[prompt];
        for (int i = 0; i < prompt; i++) p[i] = rnd.nextInt(cfg.vocabSize());
        prompts.add(p);
      }
      // prefill: all b prompts, in steps of at most 8192 tokens; once untimed (the first products
      // of a shape pay for cuBLAS's choice of kernel), then the median of 3
      int per = Math.max(1, 8192 / prompt);
      double[] prefills = new double[4];
      for (int round = 0; round < prefills.length; round++) {
        long t0 = System.nanoTime();
        for (int s0 = 0; s0 < b; s0 += per) {
          List<SequenceChunk> chunk = new ArrayList<>();
          for (int s = s0; s < Math.min(b, s0 + per); s++)
            chunk.add(new SequenceChunk(prompts.get(s), 0, tables.get(s), false));
          r.forward(chunk);
        }
        prefills[round] = (double) b * prompt / ((System.nanoTime() - t0) / 1e9);
      }
      double[] timedPrefills = java.util.Arrays.copyOfRange(prefills, 1, prefills.length);
      java.util.Arrays.sort(timedPrefills);
      double prefill = timedPrefills[1];
      // decode: warm up 2 steps (a graph is captured in the first), then time `steps` steps;
      // sampling on the device (temperature 1 over the whole vocabulary, a fresh uniform per row
      // and step), with CUDA graphs then eagerly; then with the logits copied to the host and
      // sampled there (the engine's host path)
      int pos = prompt;
      long hostPathNs = 0;
      long[][] timed = new long[2][];
      for (int eager = 0; eager < 2; eager++) {
        r.useCudaGraphs(eager == 0);
        timed[eager] = decode(r, cfg, b, tables, pos, steps, rnd);
        pos += steps + 2;
      }
      r.useCudaGraphs(true);
      List<Sampler> hostSamplers = new ArrayList<>(b);
      for (int s = 0; s < b; s++) hostSamplers.add(samplers.create(random, prompts.get(s), s));
      for (int step = 0; step < steps + 2; step++, pos++) {
        List<SequenceChunk> d = new ArrayList<>(b);
        for (int s = 0; s < b; s++)
          d.add(
              new SequenceChunk(
                  new int[] {rnd.nextInt(cfg.vocabSize())}, pos, tables.get(s), false));
        long a = System.nanoTime();
        List<float[][]> logits = r.forward(d);
        for (int s = 0; s < b; s++) hostSamplers.get(s).next(logits.get(s)[0]);
        if (step >= 2) hostPathNs += System.nanoTime() - a;
      }
      double graphMs = timed[0][0] / 1e6 / steps, eagerMs = timed[1][0] / 1e6 / steps;
      System.out.printf(
          Locale.ROOT,
          "| %d | %.0f | %.1f | %.2f | %.0f%% | %.1f | %.2f | %.0f%% | %.1f |%n",
          b,
          prefill,
          b * 1000.0 / graphMs,
          graphMs,
          100.0 * timed[0][1] / timed[0][0],
          b * 1000.0 / eagerMs,
          eagerMs,
          100.0 * timed[1][1] / timed[1][0],
          b * 1000.0 / (hostPathNs / 1e6 / steps));
    }
    r.close();
  }

  /**
   * {@code steps} timed decode steps of {@code b} sequences from {@code pos} (after 2 untimed
   * ones), sampled on the device: {wall ns, host ns} summed over the timed steps.
   */
  static long[] decode(
      CudaModelRunner r,
      ModelConfig cfg,
      int b,
      List<int[]> tables,
      int pos,
      int steps,
      Random rnd) {
    long decodeNs = 0, hostNs = 0;
    for (int step = 0; step < steps + 2; step++, pos++) {
      List<SequenceChunk> d = new ArrayList<>(b);
      List<DeviceSampling.Row> rows = new ArrayList<>(b);
      for (int s = 0; s < b; s++) {
        d.add(
            new SequenceChunk(new int[] {rnd.nextInt(cfg.vocabSize())}, pos, tables.get(s), false));
        rows.add(
            new DeviceSampling.Row(
                s, DeviceSampling.Params.simple(false, 1f, 0, 1f, 0f, rnd.nextDouble())));
      }
      long a = System.nanoTime();
      r.forwardSample(d, null, rows);
      long e = System.nanoTime();
      if (step >= 2) {
        decodeNs += e - a;
        hostNs += r.lastHostNanos();
      }
    }
    return new long[] {decodeNs, hostNs};
  }

  /** The first usable GPU's ordinal; without one, says why and exits with status 2. */
  static int firstUsable(CudaProbe.Result probe) {
    if (!probe.usable()) {
      System.err.println(probe.summary());
      System.exit(2);
    }
    return probe.usableDevices().get(0).ordinal();
  }

  /** GB/s of a 1 GiB device-to-device copy, counting bytes read and written (median of 10). */
  static double copyBandwidth(Gpu g) {
    long n = 1L << 30;
    long src = g.alloc(n), dst = g.alloc(n);
    double[] t = new double[10];
    g.copy(dst, src, n);
    g.synchronize();
    for (int i = 0; i < t.length; i++) {
      long a = System.nanoTime();
      g.copy(dst, src, n);
      g.synchronize();
      t[i] = (System.nanoTime() - a) / 1e9;
    }
    g.free(src);
    g.free(dst);
    java.util.Arrays.sort(t);
    return 2.0 * n / t[t.length / 2] / 1e9;
  }
}
