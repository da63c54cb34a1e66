package dev.troupe.bench.engine;

import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.ModelRunner;
import dev.troupe.engine.ModelRunner.SequenceChunk;
import dev.troupe.engine.cpu.CpuDiagnostics;
import dev.troupe.engine.cpu.CpuModelRunner;
import dev.troupe.engine.model.DType;
import dev.troupe.engine.model.RandomWeights;
import dev.troupe.engine.model.TransformerLayout;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * Engine throughput on random models with the Llama 3 vocabulary: prefill tokens/s (one 256-token
 * prompt), decode tokens/s at batch 1, 8 and 32, resident memory, and the machine's measured memory
 * bandwidth with the batch-1 decode ceiling it implies (weight bytes per token ÷ bandwidth).
 *
 * <p>Usage: {@code EngineBench [small|medium|all] [--quick] [--dtype bf16|f16|f32]}. Not a test:
 * results go to docs/benchmarks.md with the command and the machine's conditions.
 */
public final class EngineBench {
  static final int VOCAB = 128256;
  static final int BLOCK = 16;

  record Size(String name, int hidden, int layers, int heads, int kvHeads, int inter) {
    ModelConfig config() {
      return new ModelConfig(
          "LlamaForCausalLM",
          VOCAB,
          hidden,
          inter,
          layers,
          heads,
          kvHeads,
          hidden / heads,
          8192,
          1e-5,
          500_000.0,
          null,
          false,
          false,
          false,
          128000,
          List.of(128001),
          0);
    }
  }

  static final Size SMALL = new Size("small", 512, 8, 8, 4, 1536);
  static final Size MEDIUM = new Size("medium", 1024, 16, 16, 8, 2816);

  public static void main(String[] args) throws Exception {
    String which = args.length > 0 ? args[0] : "all";
    boolean quick = List.of(args).contains("--quick");
    DType dtype = DType.BF16;
    for (int i = 0; i + 1 < args.length; i++)
      if (args[i].equals("--dtype")) dtype = DType.valueOf(args[i + 1].toUpperCase(Locale.ROOT));
    System.out.printf(
        Locale.ROOT,
        "cores=%d OMP_NUM_THREADS=%s OMP_WAIT_POLICY=%s java=%s%n",
        Runtime.getRuntime().availableProcessors(),
        System.getenv("OMP_NUM_THREADS"),
        System.getenv("OMP_WAIT_POLICY"),
        System.getProperty("java.version"));
    double javaBw = Bandwidth.measureGBs();
    double bw = CpuDiagnostics.gemvGBs(512, 8);
    System.out.printf(
        Locale.ROOT,
        "memory read bandwidth: %.1f GB/s as OpenBLAS GEMV streams a 512 MiB matrix; %.1f GB/s Java 2-thread sum over 256 MiB%n",
        bw,
        javaBw);
    System.out.printf(Locale.ROOT, "RSS before loading a model: %s%n", rss());
    List<Size> sizes =
        switch (which) {
          case "small" -> List.of(SMALL);
          case "medium" -> List.of(MEDIUM);
          default -> List.of(SMALL, MEDIUM);
        };
    for (Size s : sizes) run(s, bw, quick, dtype);
  }

  static void run(Size size, double bw, boolean quick, DType dtype) {
    ModelConfig c = size.config();
    long weightBytes = 0;
    for (Map.Entry<String, long[]> e : TransformerLayout.of(c).tensors().entrySet())
      if (!e.getKey().equals(TransformerLayout.EMBED)) {
        long n = 1;
        for (long d : e.getValue()) n *= d;
        weightBytes += n * dtype.bytes();
      }
    int maxBatch = 64, prompt = 16, steps = quick ? 4 : 24;
    int blocksPerSeq = (256 + BLOCK - 1) / BLOCK + 2;
    long t0 = System.nanoTime();
    try (ModelRunner m =
        CpuModelRunner.load(
            c,
            new RandomWeights(c, 7L, 0.02, "bench model"),
            dtype,
            maxBatch * blocksPerSeq + blocksPerSeq,
            BLOCK)) {
      System.out.printf(
          Locale.ROOT,
          "%n== %s: hidden %d, %d layers, %d heads / %d KV, intermediate %d, vocab %d (%s)%n",
          size.name(),
          size.hidden(),
          size.layers(),
          size.heads(),
          size.kvHeads(),
          size.inter(),
          VOCAB,
          dtype);
      System.out.printf(
          Locale.ROOT,
          "load %.1f s; weights read per decode step %.0f MB (embedding rows excluded); RSS %s%n",
          (System.nanoTime() - t0) / 1e9,
          weightBytes / 1e6,
          rss());
      double ceiling = bw * 1e9 / weightBytes;
      System.out.printf(
          Locale.ROOT, "batch-1 decode ceiling at %.1f GB/s: %.1f tok/s%n", bw, ceiling);
      SplittableRandom r = new SplittableRandom(1);

      // prefill: one 256-token prompt in one chunk
      int[] table0 = table(maxBatch, blocksPerSeq);
      int[] p256 = r.ints(256, 0, VOCAB).toArray();
      m.forward(List.of(SequenceChunk.prompt(p256, 0, table0, false))); // warm-up
      int reps = quick ? 1 : 3;
      long best = Long.MAX_VALUE;
      for (int i = 0; i < reps; i++) {
        long s = System.nanoTime();
        m.forward(List.of(SequenceChunk.prompt(p256, 0, table0, false)));
        best = Math.min(best, System.nanoTime() - s);
      }
      System.out.printf(
          Locale.ROOT,
          "prefill 256 tokens: %.0f tok/s (best of %d, %.0f ms)%n",
          256 / (best / 1e9),
          reps,
          best / 1e6);

      for (int batch : new int[] {1, 8, 32, 64}) {
        List<int[]> tables = new ArrayList<>();
        List<SequenceChunk> pre = new ArrayList<>();
        for (int b = 0; b < batch; b++) {
          tables.add(table(b, blocksPerSeq));
          pre.add(
              SequenceChunk.prompt(r.ints(prompt, 0, VOCAB).toArray(), 0, tables.get(b), false));
        }
        m.forward(pre);
        int pos = prompt;
        // warm-up steps: the JIT compiles the kernels for this batch shape while they run (after
        // 2, batch 1 of the small model measured about half its warmed-up speed)
        for (int w = 0; w < (quick ? 4 : 24); w++, pos++) m.forward(decodeBatch(tables, pos, r));
        long s = System.nanoTime(), cpu0 = processCpuNanos();
        for (int i = 0; i < steps; i++, pos++) m.forward(decodeBatch(tables, pos, r));
        double secs = (System.nanoTime() - s) / 1e9;
        double cpuMs = (processCpuNanos() - cpu0) / 1e6 / steps;
        double tps = batch * steps / secs;
        System.out.printf(
            Locale.ROOT,
            "decode batch %2d: %7.1f tok/s (%.1f ms/step, process CPU %.1f ms/step)%s%n",
            batch,
            tps,
            secs * 1000 / steps,
            cpuMs,
            batch == 1
                ? String.format(
                    Locale.ROOT, " = %.0f%% of the bandwidth ceiling", 100 * tps / ceiling)
                : "");
      }
      System.out.printf(Locale.ROOT, "RSS after run: %s%n", rss());
    }
  }

  private static List<SequenceChunk> decodeBatch(List<int[]> tables, int pos, SplittableRandom r) {
    List<SequenceChunk> out = new ArrayList<>();
    for (int[] t : tables) out.add(new SequenceChunk(new int[] {r.nextInt(VOCAB)}, pos, t, false));
    return out;
  }

  private static int[] table(int seq, int blocks) {
    int[] t = new int[blocks];
    for (int i = 0; i < blocks; i++) t[i] = seq * blocks + i;
    return t;
  }

  /** CPU time of the whole process (all threads, OpenBLAS's included), ns. */
  static long processCpuNanos() {
    return ((com.sun.management.OperatingSystemMXBean)
            java.lang.management.ManagementFactory.getOperatingSystemMXBean())
        .getProcessCpuTime();
  }

  static String rss() {
    try {
      for (String line : Files.readAllLines(Path.of("/proc/self/status")))
        if (line.startsWith("VmRSS:")) {
          long kb = Long.parseLong(line.replaceAll("[^0-9]", ""));
          return String.format(Locale.ROOT, "%.0f MB", kb / 1024.0);
        }
    } catch (IOException | NumberFormatException e) {
      return "n/a";
    }
    return "n/a";
  }
}
