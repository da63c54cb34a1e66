package dev.troupe.engine.cuda;

import dev.troupe.engine.DeviceSampling;
import dev.troupe.engine.ModelConfig;
import dev.troupe.engine.ModelRunner.SequenceChunk;
import dev.troupe.engine.model.DType;
import dev.troupe.engine.model.ModelLoadException;
import dev.troupe.engine.model.TransformerLayout;
import dev.troupe.engine.model.WeightSource;
import dev.troupe.engine.testing.TinyModels;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.ShortBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * The host's cost of a decode step of the real {@link CudaModelRunner} and {@link CudaGpu}, through
 * the JavaCPP bindings, against the stand-in driver and cuBLAS in counting mode ({@link
 * NativeStubs}, {@code stub_counts.c}): device calls return at once, so a step's wall time is what
 * the host spends on it, and the stand-ins count the calls it makes. Zero weights (no math runs).
 * {@link #measure} forks a JVM (the stand-ins must be on its {@code LD_LIBRARY_PATH} from the
 * start) running {@link #main}; bench's {@code StubStepBench} and {@code StubDriverTest} use it.
 */
public final class StubStepCost {
  private StubStepCost() {}

  /**
   * One batch size: per decode step the calling thread's CPU µs (median; steadier than wall time on
   * a shared machine), its wall µs (median), and the driver/cuBLAS calls.
   */
  public record Result(
      int batch, double cpuMicros, double wallMicros, Map<String, Double> callsPerStep) {
    public double totalCalls() {
      return callsPerStep.values().stream().mapToDouble(Double::doubleValue).sum();
    }

    public double calls(String fn) {
      return callsPerStep.getOrDefault(fn, 0.0);
    }
  }

  /** The shapes: {@code qwen3-1.7b} (the GPU benchmark's) or {@code tiny-ARCH} (2 layers). */
  public static ModelConfig shape(String name) {
    if (name.startsWith("tiny-"))
      return TinyModels.config(TinyModels.Arch.valueOf(name.substring(5).toUpperCase(Locale.ROOT)));
    ModelConfig c = KernelShapes.all().get(name);
    if (c == null) throw new IllegalArgumentException("no shape " + name);
    return c;
  }

  /**
   * Times {@code steps} decode steps per batch size after {@code warmup} untimed ones (the JIT's
   * warm-up), in a forked JVM over the counting stand-ins; {@code work} is a scratch folder.
   */
  public static List<Result> measure(
      String shape, int warmup, int steps, Path work, List<Integer> batches) {
    return measure(shape, warmup, steps, work, batches, true);
  }

  /**
   * {@link #measure(String, int, int, Path, List)} with CUDA graphs on or off (--enforce-eager).
   */
  public static List<Result> measure(
      String shape, int warmup, int steps, Path work, List<Integer> batches, boolean cudaGraphs) {
    Path stubs = NativeStubs.recording();
    Path counts = work.resolve("counts");
    try {
      Files.createDirectories(counts);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    List<String> args = new ArrayList<>(List.of(shape, "" + warmup, "" + steps, counts.toString()));
    batches.forEach(b -> args.add("" + b));
    Map<String, String> env = new TreeMap<>();
    env.put("LD_LIBRARY_PATH", stubs.toString());
    env.put("TROUPE_CUDA_STUB_COUNTS", counts.toString());
    env.put("CUDA_HOME", null);
    env.put("CUDA_PATH", null);
    ForkedJvm run =
        ForkedJvm.run(
            ForkedJvm.classpath(s -> s.contains("cuda-redist")),
            env,
            List.of(
                "-Dtroupe.cuda.cacheDir=" + stubs.resolve("kernels"),
                "-Dtroupe.stub.cudaGraphs=" + cudaGraphs),
            work.resolve("child.log"),
            StubStepCost.class,
            args.toArray(String[]::new));
    if (run.exitCode() != 0)
      throw new IllegalStateException("the forked JVM failed:\n" + run.output());
    List<Result> out = new ArrayList<>();
    for (String line : run.output().split("\n"))
      if (line.startsWith("RESULT ")) out.add(parse(line));
    return out;
  }

  private static Result parse(String line) {
    Map<String, String> kv = new TreeMap<>();
    for (String p : line.substring(7).trim().split(" ")) {
      int eq = p.indexOf('=');
      kv.put(p.substring(0, eq), p.substring(eq + 1));
    }
    Map<String, Double> calls = new TreeMap<>();
    kv.forEach(
        (k, v) -> {
          if (k.startsWith("cu")) calls.put(k, Double.parseDouble(v));
        });
    return new Result(
        Integer.parseInt(kv.get("batch")),
        Double.parseDouble(kv.get("cpu_us")),
        Double.parseDouble(kv.get("wall_us")),
        calls);
  }

  /** {@code SHAPE WARMUP STEPS COUNTS_DIR BATCH...}: one RESULT line per batch size. */
  public static void main(String[] args) {
    ModelConfig cfg = shape(args[0]);
    int warmup = Integer.parseInt(args[1]), steps = Integer.parseInt(args[2]);
    Path counts = Path.of(args[3]);
    int[] batches = Arrays.stream(args, 4, args.length).mapToInt(Integer::parseInt).toArray();
    int maxBatch = Arrays.stream(batches).max().orElse(1);
    int bs = 16, pos0 = Math.min(128, cfg.maxPositionEmbeddings() / 2);
    // every sequence on the same blocks: no kernel runs, and the host's work is the same
    int[] table = new int[(pos0 + 16) / bs + 1];
    for (int i = 0; i < table.length; i++) table[i] = i;
    try (CudaModelRunner r =
        CudaModelRunner.load(
            CudaProbe.open(0),
            cfg,
            new ZeroWeights(cfg),
            bs,
            table.length,
            0,
            maxBatch,
            Boolean.parseBoolean(System.getProperty("troupe.stub.cudaGraphs", "true")))) {
      System.out.println("runner: " + r.device() + ", " + args[0]);
      java.util.Random rnd = new java.util.Random(1);
      java.lang.management.ThreadMXBean threads =
          java.lang.management.ManagementFactory.getThreadMXBean();
      for (int b : batches) {
        long[] ns = new long[steps], cpu = new long[steps];
        Map<String, Long> before = null;
        for (int s = 0; s < warmup + steps; s++) {
          if (s == warmup) before = counts(counts);
          List<SequenceChunk> chunks = new ArrayList<>(b);
          List<DeviceSampling.Row> rows = new ArrayList<>(b);
          for (int i = 0; i < b; i++) {
            int tok = rnd.nextInt(cfg.vocabSize());
            chunks.add(new SequenceChunk(new int[] {tok}, pos0 + s % 16, table, false));
            rows.add(
                new DeviceSampling.Row(
                    i, DeviceSampling.Params.simple(false, 1f, 0, 1f, 0f, rnd.nextDouble())));
          }
          long c0 = threads.getCurrentThreadCpuTime(), t0 = System.nanoTime();
          r.forwardSample(chunks, null, rows);
          if (s >= warmup) {
            ns[s - warmup] = System.nanoTime() - t0;
            cpu[s - warmup] = threads.getCurrentThreadCpuTime() - c0;
          }
        }
        Map<String, Long> after = counts(counts);
        StringBuilder line = new StringBuilder("RESULT batch=" + b);
        Arrays.sort(ns);
        Arrays.sort(cpu);
        line.append(String.format(Locale.ROOT, " cpu_us=%.2f", cpu[steps / 2] / 1e3));
        line.append(String.format(Locale.ROOT, " wall_us=%.2f", ns[steps / 2] / 1e3));
        for (var e : after.entrySet()) {
          long d = e.getValue() - before.getOrDefault(e.getKey(), 0L);
          if (d > 0)
            line.append(String.format(Locale.ROOT, " %s=%.2f", e.getKey(), (double) d / steps));
        }
        System.out.println(line);
      }
    }
  }

  /** The stand-ins' call counts so far, per function (stub_counts.c's records). */
  static Map<String, Long> counts(Path dir) {
    Map<String, Long> out = new TreeMap<>();
    for (String lib : List.of("libcuda", "libcublas")) {
      Path f = dir.resolve(lib + ".counts");
      if (!Files.exists(f)) continue;
      ByteBuffer b;
      try {
        b = ByteBuffer.wrap(Files.readAllBytes(f)).order(ByteOrder.LITTLE_ENDIAN);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      for (int at = 0; at + 64 <= b.capacity(); at += 64) {
        int len = 0;
        while (len < 56 && b.get(at + len) != 0) len++;
        if (len == 0) break;
        out.put(new String(b.array(), at, len, StandardCharsets.US_ASCII), b.getLong(at + 56));
      }
    }
    return out;
  }

  /** Every tensor of the layout, all zeros, nothing held in memory. */
  static final class ZeroWeights implements WeightSource {
    private final Map<String, long[]> shapes;

    ZeroWeights(ModelConfig c) {
      shapes = TransformerLayout.of(c).tensors();
    }

    @Override
    public SortedSet<String> names() {
      return new TreeSet<>(shapes.keySet());
    }

    @Override
    public TensorInfo info(String name) {
      long[] s = shapes.get(name);
      if (s == null) throw new ModelLoadException("zero weights: no tensor " + name);
      return new TensorInfo(name, DType.BF16, Arrays.stream(s).boxed().toList(), "zero weights");
    }

    @Override
    public void copyTo(String name, long offset, int count, FloatBuffer dst) {
      dst.position(dst.position() + count); // the runner's staging is never written: zeros
    }

    @Override
    public void copyTo(String name, long offset, int count, ShortBuffer dst, DType as) {
      dst.position(dst.position() + count);
    }

    @Override
    public String origin() {
      return "zero weights";
    }
  }
}
