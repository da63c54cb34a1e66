package dev.troupe.bench.llamacpp;

import dev.troupe.engine.tokenizer.TokenizerFixtures;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * Troupe against native llama.cpp as a user on this machine would run both (issue 27): {@code
 * troupe serve} over HTTP (its own JVM, BF16 weights, {@code --dtype auto}, a fresh {@code
 * cache_salt} per request so no prefix-cache hit) against {@code llama-server} built with {@code
 * -DGGML_NATIVE=ON} ({@code bench/llamacpp/build-llama-server.sh}), 2 threads, 32 slots, prompt
 * cache off, on the same random Llama-3-vocabulary weights as BF16, F16 and Q8_0 GGUFs (Q8_0 by its
 * own {@code llama-quantize} from the BF16 file). All servers run at once, idle but for the one
 * being measured; every figure alternates Troupe and each llama-server within a round.
 *
 * <p>Figures: prefill = 257 / T1 (256-token prompt + BOS, one new token; per round the median of
 * five such requests, one after another); batch-1 decode = 128 / the time from the first to the
 * last streamed event of one request of 1 + 128 new tokens (greedy, past EOS; {@link
 * StreamedDecode}: no prefill in it, as {@code EngineLoop} times decode); N streams = N × 64 / wall
 * for N concurrent requests of a 32-token prompt and 64 new tokens, N = 8 and 32, the same N on
 * both sides. Every prompt differs. Before round 1 every engine runs one untimed pass of the
 * figures and 10 batch-1 decodes ({@link #warmUp}). Printed per round and as min / median / max per
 * engine, with Troupe's median over the better 16-bit llama-server median and each Troupe round
 * over Troupe's median.
 *
 * <p>Usage: {@code VersusLlamaServer [--sizes small,medium] [--rounds 3] [--llama-bin DIR] [--peers
 * bf16,f16,q8_0] [--work DIR] [--jar deploy/target/troupe.jar] [--xmx 3g] [--threads 2]
 * [--num-blocks 400] [--troupe-jvm "OPTIONS"] [--troupe-quantization q8_0] [--warmup-decodes 10]}
 * (Troupe's weights 8-bit: then compare with the {@code q8_0} peer); {@code
 * bench/llamacpp/versus-llama-server.sh} builds everything and runs it. Not a test: results go to
 * docs/benchmarks.md.
 */
public final class VersusLlamaServer {
  private static final int PROMPT = 256, DECODE = 128, STREAM_PROMPT = 32, STREAM_NEW = 64;

  /** Prefills per round, their median the round's figure. */
  private static final int PREFILLS = 5;

  private static final String[] FIGURES = {
    "prefill 256 (tok/s)", "batch-1 decode (tok/s)", "8 streams (tok/s)", "32 streams (tok/s)"
  };

  private VersusLlamaServer() {}

  public static void main(String[] args) throws Exception {
    Map<String, String> o = new LinkedHashMap<>();
    for (int i = 0; i + 1 < args.length; i += 2) o.put(args[i], args[i + 1]);
    if (args.length % 2 != 0) throw new IllegalArgumentException(Arrays.toString(args));
    Path work = Path.of(o.getOrDefault("--work", "/tmp/troupe-vs-llamacpp"));
    Path tokenizer = TokenizerFixtures.dir("llama3");
    Path bin =
        Path.of(
            o.getOrDefault(
                "--llama-bin",
                System.getProperty("user.home") + "/.cache/troupe/llama.cpp/build/bin"));
    int rounds = Integer.parseInt(o.getOrDefault("--rounds", "3"));
    int threads = Integer.parseInt(o.getOrDefault("--threads", "2"));
    List<String> peers = List.of(o.getOrDefault("--peers", "bf16,f16,q8_0").split(","));
    List<String> jvm =
        new ArrayList<>(
            List.of(
                "-Xmx" + o.getOrDefault("--xmx", "3g"),
                "-Dtroupe.worker.engine.num-blocks=" + o.getOrDefault("--num-blocks", "400"),
                "-Dtroupe.worker.compute.cpu-threads=" + threads));
    String extra = o.getOrDefault("--troupe-jvm", "").trim();
    if (!extra.isEmpty()) jvm.addAll(List.of(extra.split("\\s+")));
    System.out.printf(
        Locale.ROOT,
        "cores=%d java=%s load %s; troupe %s %s; llama-server %s, %d threads, 32 slots%n",
        Runtime.getRuntime().availableProcessors(),
        System.getProperty("java.version"),
        VersusLlamaCpp.load(),
        jvm,
        flags(o),
        bin,
        threads);
    for (String size : o.getOrDefault("--sizes", "small,medium").split(","))
      run(BenchModel.size(size, work), tokenizer, bin, peers, rounds, threads, jvm, work, o);
    System.exit(0);
  }

  /**
   * {@code troupe serve}'s extra flags: {@code --quantization Q} from {@code
   * --troupe-quantization}.
   */
  private static List<String> flags(Map<String, String> o) {
    String q = o.getOrDefault("--troupe-quantization", "none");
    return q.equals("none") ? List.of() : List.of("--quantization", q);
  }

  private static boolean jfr; // --jfr on: record the Troupe server, print each figure's start

  private static void run(
      BenchModel m,
      Path tokenizer,
      Path bin,
      List<String> peers,
      int rounds,
      int threads,
      List<String> jvm,
      Path work,
      Map<String, String> o)
      throws Exception {
    m.ensureWritten(tokenizer); // safetensors + the F16 GGUF
    Map<String, Path> ggufs = new LinkedHashMap<>();
    Path bf16 = m.ggufBf16(tokenizer);
    for (String p : peers) ggufs.put(p, p.equals("f16") ? m.gguf() : quantized(bin, bf16, p));
    System.out.printf(Locale.ROOT, "%n== %s: %s%n", m.name(), m.config());
    Path data = Files.createTempDirectory(work, "data");
    jfr = o.getOrDefault("--jfr", "off").equals("on");
    if (jfr) {
      jvm = new ArrayList<>(jvm);
      jvm.add(
          "-XX:StartFlightRecording=settings=profile,dumponexit=true,filename="
              + work.resolve(m.name() + "-troupe.jfr"));
    }
    Path jar = Path.of(o.getOrDefault("--jar", "deploy/target/troupe.jar"));
    List<LlamaServer> llamas = new ArrayList<>();
    try (TroupeServer troupe =
        TroupeServer.start(
            jar, m.dir(), data, jvm, Map.of(), flags(o), work.resolve(m.name() + "-troupe.log"))) {
      for (var e : ggufs.entrySet())
        llamas.add(
            LlamaServer.start(
                bin,
                e.getValue(),
                threads,
                32,
                512,
                work.resolve(m.name() + "-" + e.getKey() + ".log")));
      VersusLlamaCpp.Prompts p = new VersusLlamaCpp.Prompts(tokenizer);
      int tp = troupe.promptTokens(p.text(PROMPT, 0)),
          lp = llamas.get(0).promptTokens(p.text(PROMPT, 0));
      if (tp != PROMPT + 1 || lp != PROMPT + 1)
        throw new IllegalStateException("prompt tokens: troupe " + tp + ", llama-server " + lp);
      List<String> engines = new ArrayList<>(List.of("troupe"));
      for (String peer : peers) engines.add("llama-server " + peer);
      // engine -> figure -> per-round values
      Map<String, Map<String, List<Double>>> f = new LinkedHashMap<>();
      int[] seed = {1000};
      // untimed: JIT, pages and both sides' concurrent paths
      int decodes = Integer.parseInt(o.getOrDefault("--warmup-decodes", "10"));
      for (int e = 0; e < engines.size(); e++) warmUp(e, troupe, llamas, p, seed, decodes);
      for (int r = 0; r < rounds; r++) {
        String load = VersusLlamaCpp.load();
        for (int i = 0; i < FIGURES.length; i++)
          for (int e = 0; e < engines.size(); e++)
            figure(
                i,
                e,
                troupe,
                llamas,
                p,
                seed,
                f.computeIfAbsent(engines.get(e), k -> new LinkedHashMap<>()));
        System.out.printf(
            Locale.ROOT, "round %d (load %s -> %s):%n", r + 1, load, VersusLlamaCpp.load());
        for (String fig : FIGURES) {
          StringBuilder line = new StringBuilder(String.format(Locale.ROOT, "  %-24s", fig));
          for (String e : engines)
            line.append(String.format(Locale.ROOT, "  %s %8.1f", e, f.get(e).get(fig).get(r)));
          System.out.println(line);
        }
      }
      summary(m.name(), rounds, engines, f);
    } finally {
      for (LlamaServer l : llamas) l.close();
    }
  }

  /**
   * Untimed on engine e (warm-up): one pass of every figure, then {@code decodes} batch-1 decodes
   * more. A server that has run a while is what the figures compare: Troupe's JVM compiles the code
   * it runs once per step (the team's step, the scheduler, the sampler) to C2 only after some
   * thousand steps — streamed batch-1 rates of a fresh server's first requests, one after another,
   * 178 177 194 228 208 204 252 237 246 264 266 274 tok/s (small model, 8-bit) — and one pass of
   * the figures is a few hundred steps.
   */
  private static void warmUp(
      int e, TroupeServer t, List<LlamaServer> l, VersusLlamaCpp.Prompts p, int[] seed, int decodes)
      throws Exception {
    for (int i = 0; i < FIGURES.length; i++) figure(i, e, t, l, p, seed, new LinkedHashMap<>());
    for (int k = 0; k < decodes; k++) figure(1, e, t, l, p, seed, new LinkedHashMap<>());
  }

  /** Measures figure i on engine e (0 = Troupe, else llama-server e − 1) into {@code out}. */
  private static void figure(
      int i,
      int e,
      TroupeServer t,
      List<LlamaServer> l,
      VersusLlamaCpp.Prompts p,
      int[] seed,
      Map<String, List<Double>> out)
      throws Exception {
    if (jfr)
      System.out.printf(
          Locale.ROOT, "    %s %s on engine %d%n", java.time.LocalTime.now(), FIGURES[i], e);
    double v;
    if (i == 0) {
      // one prefill takes ~0.1 s: a single one per round is mostly the scheduler's jitter
      List<Double> each = new ArrayList<>();
      for (int k = 0; k < PREFILLS; k++)
        each.add((PROMPT + 1) / time(() -> one(e, t, l, p.text(PROMPT, seed[0]++), 1)));
      v = median(sorted(each));
    } else if (i == 1) {
      String text = p.text(PROMPT, seed[0]++);
      v =
          DECODE
              / (e == 0
                  ? t.streamedDecodeSeconds(text, 1 + DECODE)
                  : l.get(e - 1).streamedDecodeSeconds(text, 1 + DECODE));
    } else {
      int n = i == 2 ? 8 : 32, base = seed[0];
      seed[0] += n;
      double wall =
          VersusLlamaCpp.streams(
              n,
              k ->
                  e == 0
                      ? t.chat(p.text(STREAM_PROMPT, base + k), STREAM_NEW, true)
                      : l.get(e - 1).complete(p.text(STREAM_PROMPT, base + k), STREAM_NEW));
      v = n * STREAM_NEW / wall;
    }
    out.computeIfAbsent(FIGURES[i], k -> new ArrayList<>()).add(v);
  }

  private static int one(int e, TroupeServer t, List<LlamaServer> l, String text, int n)
      throws Exception {
    return e == 0 ? t.chat(text, n, false) : l.get(e - 1).complete(text, n);
  }

  private static void summary(
      String model, int rounds, List<String> engines, Map<String, Map<String, List<Double>>> f) {
    System.out.printf(Locale.ROOT, "%s over %d rounds, median (min-max):%n", model, rounds);
    for (String fig : FIGURES) {
      StringBuilder line = new StringBuilder(String.format(Locale.ROOT, "  %-24s", fig));
      double best16 = 0;
      for (String e : engines) {
        List<Double> v = new ArrayList<>(f.get(e).get(fig));
        v.sort(null);
        double med = median(v);
        if (e.endsWith("bf16") || e.endsWith("f16")) best16 = Math.max(best16, med);
        line.append(
            String.format(
                Locale.ROOT, "  %s %.1f (%.1f-%.1f)", e, med, v.get(0), v.get(v.size() - 1)));
      }
      List<Double> tr = new ArrayList<>(f.get("troupe").get(fig));
      tr.sort(null);
      double tMed = median(tr);
      if (best16 > 0)
        line.append(String.format(Locale.ROOT, "  | troupe / best 16-bit %.2f", tMed / best16));
      if (f.containsKey("llama-server q8_0"))
        line.append(
            String.format(
                Locale.ROOT,
                "  | troupe / q8_0 %.2f",
                tMed / median(sorted(f.get("llama-server q8_0").get(fig)))));
      line.append(String.format(Locale.ROOT, "  | troupe min / median %.2f", tr.get(0) / tMed));
      System.out.println(line);
    }
  }

  private static List<Double> sorted(List<Double> v) {
    List<Double> s = new ArrayList<>(v);
    s.sort(null);
    return s;
  }

  private static double median(List<Double> sorted) {
    int n = sorted.size();
    return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
  }

  /** {@code bf16} itself, or llama-quantize's {@code type} (e.g. q8_0) of it, made once. */
  private static Path quantized(Path bin, Path bf16, String type) throws Exception {
    if (type.equals("bf16")) return bf16;
    Path out = bf16.resolveSibling("model-" + type + ".gguf");
    if (Files.isRegularFile(out)) return out;
    Path part = out.resolveSibling(out.getFileName() + ".part");
    Process q =
        new ProcessBuilder(
                bin.resolve("llama-quantize").toString(),
                bf16.toString(),
                part.toString(),
                type.toUpperCase(Locale.ROOT))
            .redirectErrorStream(true)
            .redirectOutput(bf16.resolveSibling("quantize-" + type + ".log").toFile())
            .start();
    if (q.waitFor() != 0) throw new IllegalStateException("llama-quantize " + type + " failed");
    Files.move(part, out);
    return out;
  }

  private static double time(Callable<?> f) throws Exception {
    long t0 = System.nanoTime();
    f.call();
    return (System.nanoTime() - t0) / 1e9;
  }
}
