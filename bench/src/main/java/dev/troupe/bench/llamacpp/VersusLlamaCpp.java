package dev.troupe.bench.llamacpp;

import de.kherud.llama.InferenceParameters;
import de.kherud.llama.LlamaModel;
import de.kherud.llama.LogLevel;
import de.kherud.llama.ModelParameters;
import de.kherud.llama.args.LogFormat;
import dev.troupe.engine.tokenizer.TokenizerFixtures;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * Troupe against llama.cpp on the same random Llama-3-vocabulary weights, measured alternately in
 * one run (issue 12's method): Troupe as {@code troupe serve} over HTTP (its own JVM, BF16 weights,
 * {@code --dtype auto}); llama.cpp 4.2.0's bundled CPU build (Maven {@code de.kherud:llama}) in
 * this JVM, F16 GGUF written from the same BF16 values, 8 slots, {@code cache_prompt} off, called
 * through JNI (no HTTP: that favours llama.cpp).
 *
 * <p>Figures per round: prefill = 257 / T1 for a 256-token prompt + BOS and {@code max_tokens} 1;
 * decode = 128 / (TN − T1) with {@code max_tokens} 1 + 128 (greedy, {@code ignore_eos}); streams =
 * streams × 64 / wall for concurrent requests of a 32-token prompt and 64 new tokens (Troupe 8 and
 * 32, llama.cpp 8 = its slots). Every prompt differs in its words, so no prefix cache helps. Also
 * Troupe's resident memory against its file size and KV cache.
 *
 * <p>Usage: {@code VersusLlamaCpp [--sizes small,medium] [--rounds 3] [--work DIR] [--tokenizer
 * DIR] [--jar deploy/target/troupe.jar] [--xmx 3g] [--threads 2] [--num-blocks 400] [--troupe-jvm
 * "OPTIONS"] [--llama-poll 50] [--llama-threads N]} ({@code --llama-poll}: llama.cpp's busy-wait
 * level, 0–100, its default 50; 0 sleeps instead, which suits a loaded machine; {@code
 * --llama-threads}: llama.cpp's threads, default {@code --threads}: on a loaded machine one thread
 * avoids its barriers waiting for a preempted second thread). Build the jar first ({@code mvn -B -q
 * -DskipTests package}). Not a test: results go to docs/benchmarks.md.
 */
public final class VersusLlamaCpp {
  private static final int PROMPT = 256, DECODE = 128, STREAM_PROMPT = 32, STREAM_NEW = 64;

  public static void main(String[] args) throws Exception {
    Map<String, String> o = options(args);
    Path work = Path.of(o.getOrDefault("--work", "/tmp/troupe-vs-llamacpp"));
    Path tokenizer =
        o.containsKey("--tokenizer")
            ? Path.of(o.get("--tokenizer"))
            : TokenizerFixtures.dir("llama3");
    Path jar = Path.of(o.getOrDefault("--jar", "deploy/target/troupe.jar"));
    int rounds = Integer.parseInt(o.getOrDefault("--rounds", "3"));
    int threads = Integer.parseInt(o.getOrDefault("--threads", "2"));
    String xmx = o.getOrDefault("--xmx", "3g");
    int numBlocks = Integer.parseInt(o.getOrDefault("--num-blocks", "400"));
    List<BenchModel> models = new ArrayList<>();
    for (String s : o.getOrDefault("--sizes", "small,medium").split(","))
      models.add(BenchModel.size(s, work));
    LlamaModel.setLogger(
        LogFormat.TEXT,
        (level, msg) -> {
          if (level == LogLevel.ERROR) System.err.print("llama.cpp: " + msg);
        });
    System.out.printf(
        Locale.ROOT,
        "cores=%d java=%s load %s%n",
        Runtime.getRuntime().availableProcessors(),
        System.getProperty("java.version"),
        load());
    for (BenchModel m : models)
      run(
          m,
          tokenizer,
          jar,
          rounds,
          threads,
          xmx,
          numBlocks,
          work,
          o.getOrDefault("--troupe-jvm", ""),
          Integer.parseInt(o.getOrDefault("--llama-poll", "50")),
          Integer.parseInt(o.getOrDefault("--llama-threads", Integer.toString(threads))));
    System.exit(0);
  }

  private static void run(
      BenchModel m,
      Path tokenizer,
      Path jar,
      int rounds,
      int threads,
      String xmx,
      int numBlocks,
      Path work,
      String troupeJvm,
      int poll,
      int llamaThreads)
      throws Exception {
    m.ensureWritten(tokenizer);
    var c = m.config();
    long kvBytes = 2L * c.numLayers() * numBlocks * 16 * c.numKvHeads() * c.headDim() * 4;
    System.out.printf(
        Locale.ROOT,
        "%n== %s: hidden %d, %d layers, %d/%d heads, intermediate %d, vocab %d; safetensors %d MB (BF16), gguf %d MB (F16)%n",
        m.name(),
        c.hiddenSize(),
        c.numLayers(),
        c.numHeads(),
        c.numKvHeads(),
        c.intermediateSize(),
        c.vocabSize(),
        m.safetensorsBytes() >> 20,
        m.gguf().toFile().length() >> 20);
    System.out.printf(
        Locale.ROOT,
        "troupe: %d engine threads, -Xmx%s %s; llama.cpp: %d threads, poll %d, 8 slots%n",
        threads,
        xmx,
        troupeJvm,
        llamaThreads,
        poll);
    Path data = Files.createTempDirectory(work, "data");
    List<String> jvm =
        new ArrayList<>(
            List.of(
                "-Xmx" + xmx,
                "-Dtroupe.worker.engine.num-blocks=" + numBlocks,
                "-Dtroupe.engine.threads=" + threads));
    if (!troupeJvm.isBlank()) jvm.addAll(List.of(troupeJvm.trim().split("\\s+")));
    long rssBefore = rssSelf();
    ModelParameters mp =
        new ModelParameters()
            .setModel(m.gguf().toString())
            .setThreads(llamaThreads)
            .setThreadsBatch(llamaThreads)
            .setParallel(8)
            .setCtxSize(8 * 512)
            .setBatchSize(512)
            .setGpuLayers(0)
            .setPoll(poll)
            .setPollBatch(poll)
            .disableLog()
            .skipWarmup();
    try (TroupeServer troupe =
            TroupeServer.start(jar, m.dir(), data, jvm, work.resolve(m.name() + "-troupe.log"));
        LlamaModel llama = new LlamaModel(mp)) {
      long llamaRss = rssSelf() - rssBefore;
      long troupeRss = troupe.rssBytes();
      Prompts p = new Prompts(tokenizer);
      int tp = troupe.promptTokens(p.text(PROMPT, 0)), lp = llama.encode(p.text(PROMPT, 0)).length;
      System.out.printf(
          Locale.ROOT, "prompt tokens: troupe %d (BOS + text), llama.cpp %d (+ BOS)%n", tp, lp);
      if (tp != PROMPT + 1 || lp != PROMPT)
        throw new IllegalStateException("prompt is not 256 tokens + BOS");
      // warm-up both (JIT, pages)
      troupe.chat(p.text(PROMPT, 1), 8, false);
      llamaComplete(llama, p.text(PROMPT, 1), 8);
      int k = 10;
      // and their concurrent paths, once untimed: Troupe's streaming (HTTP, SSE, the batched
      // steps) is otherwise JIT-compiled during the first round's figures
      int warm = k;
      k += 96;
      streams(8, i -> troupe.chat(p.text(STREAM_PROMPT, warm + i), STREAM_NEW, true));
      streams(32, i -> troupe.chat(p.text(STREAM_PROMPT, warm + 32 + i), STREAM_NEW, true));
      streams(8, i -> llamaComplete(llama, p.text(STREAM_PROMPT, warm + 64 + i), STREAM_NEW));
      Map<String, List<double[]>> figures =
          new LinkedHashMap<>(); // name -> per round {troupe, llama}
      for (int r = 0; r < rounds; r++) {
        String loadStart = load();
        String a = p.text(PROMPT, k++),
            b = p.text(PROMPT, k++),
            a2 = p.text(PROMPT, k++),
            b2 = p.text(PROMPT, k++);
        double t1 = time(() -> troupe.chat(a, 1, false));
        double l1 = time(() -> llamaComplete(llama, b, 1));
        double tn = time(() -> troupe.chat(a2, 1 + DECODE, false));
        double ln = time(() -> llamaComplete(llama, b2, 1 + DECODE));
        add(figures, "prefill 256 (tok/s)", (PROMPT + 1) / t1, (PROMPT + 1) / l1);
        add(figures, "batch-1 decode (tok/s)", DECODE / (tn - t1), DECODE / (ln - l1));
        int base = k;
        k += 64;
        double t8 = streams(8, i -> troupe.chat(p.text(STREAM_PROMPT, base + i), STREAM_NEW, true));
        double l8 =
            streams(8, i -> llamaComplete(llama, p.text(STREAM_PROMPT, base + 32 + i), STREAM_NEW));
        add(figures, "8 concurrent (tok/s)", 8 * STREAM_NEW / t8, 8 * STREAM_NEW / l8);
        int base2 = k;
        k += 64;
        double t32 =
            streams(32, i -> troupe.chat(p.text(STREAM_PROMPT, base2 + i), STREAM_NEW, true));
        add(
            figures,
            "32 concurrent vs llama.cpp 8 slots (tok/s)",
            32 * STREAM_NEW / t32,
            8 * STREAM_NEW / l8);
        System.out.printf(Locale.ROOT, "round %d (load %s -> %s):%n", r + 1, loadStart, load());
        for (var e : figures.entrySet()) {
          double[] v = e.getValue().get(r);
          System.out.printf(
              Locale.ROOT,
              "  %-44s troupe %8.1f  llama.cpp %8.1f  ratio %.2f%n",
              e.getKey(),
              v[0],
              v[1],
              v[0] / v[1]);
        }
      }
      System.out.printf(
          Locale.ROOT,
          "%s summary over %d rounds (troupe / llama.cpp F16, min-max):%n",
          m.name(),
          rounds);
      for (var e : figures.entrySet()) {
        double lo = Double.MAX_VALUE, hi = 0;
        for (double[] v : e.getValue()) {
          lo = Math.min(lo, v[0] / v[1]);
          hi = Math.max(hi, v[0] / v[1]);
        }
        System.out.printf(Locale.ROOT, "  %-44s %.2f-%.2f%n", e.getKey(), lo, hi);
      }
      long rssAfter = troupe.rssBytes();
      System.out.printf(
          Locale.ROOT,
          "troupe RSS: %d MB after load, %d MB after the run; file %d MB + KV cache %d MB = %d MB -> RSS / (file + KV) = %.2f; llama.cpp (mmap, in the bench JVM): +%d MB%n",
          troupeRss >> 20,
          rssAfter >> 20,
          m.safetensorsBytes() >> 20,
          kvBytes >> 20,
          (m.safetensorsBytes() + kvBytes) >> 20,
          (double) rssAfter / (m.safetensorsBytes() + kvBytes),
          llamaRss >> 20);
    }
  }

  private static int llamaComplete(LlamaModel llama, String text, int n) {
    InferenceParameters ip =
        new InferenceParameters(text)
            .setNPredict(n)
            .setTemperature(0f)
            .setIgnoreEos(true)
            .setCachePrompt(false);
    llama.complete(ip);
    return n;
  }

  interface Job {
    int run(int i) throws Exception;
  }

  static double streams(int n, Job job) throws Exception {
    ExecutorService ex = Executors.newFixedThreadPool(n);
    try {
      List<Callable<Integer>> tasks = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        int id = i;
        tasks.add(() -> job.run(id));
      }
      long t0 = System.nanoTime();
      for (Future<Integer> f : ex.invokeAll(tasks)) f.get();
      return (System.nanoTime() - t0) / 1e9;
    } finally {
      ex.shutdown();
    }
  }

  private static double time(Callable<?> f) throws Exception {
    long t0 = System.nanoTime();
    f.call();
    return (System.nanoTime() - t0) / 1e9;
  }

  private static void add(Map<String, List<double[]>> f, String name, double troupe, double llama) {
    f.computeIfAbsent(name, x -> new ArrayList<>()).add(new double[] {troupe, llama});
  }

  /** Distinct prompts of exactly n tokens: single-token words of the Llama 3 vocabulary. */
  static final class Prompts {
    private final List<String> words = new ArrayList<>();

    Prompts(Path tokenizerDir) throws IOException {
      var vocab =
          new com.fasterxml.jackson.databind.ObjectMapper()
              .readTree(tokenizerDir.resolve("tokenizer.json").toFile())
              .path("model")
              .path("vocab");
      vocab
          .fieldNames()
          .forEachRemaining(
              t -> {
                if (t.matches("Ġ[a-z]{3,8}")) words.add(" " + t.substring(1));
              });
      if (words.size() < 1000) throw new IllegalStateException("too few single-token words");
    }

    String text(int n, int seed) {
      Random r = new Random(seed);
      StringBuilder s = new StringBuilder();
      for (int i = 0; i < n; i++) s.append(words.get(r.nextInt(words.size())));
      return s.toString();
    }
  }

  static String load() throws IOException {
    return Files.readString(Path.of("/proc/loadavg")).split(" ")[0];
  }

  private static long rssSelf() throws IOException {
    for (String line : Files.readAllLines(Path.of("/proc/self/status")))
      if (line.startsWith("VmRSS:")) return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
    return -1;
  }

  private static Map<String, String> options(String[] args) {
    Map<String, String> o = new LinkedHashMap<>();
    for (int i = 0; i + 1 < args.length; i += 2) o.put(args[i], args[i + 1]);
    if (args.length % 2 != 0)
      throw new IllegalArgumentException("options come in pairs: " + Arrays.toString(args));
    return o;
  }
}
