package dev.troupe.bench.memory;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.troupe.bench.llamacpp.BenchModel;
import dev.troupe.bench.llamacpp.TroupeServer;
import dev.troupe.engine.tokenizer.TokenizerFixtures;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * Where a served model's resident memory goes: {@code troupe serve} of one model directory as a
 * user runs it ({@link TroupeServer}: the distribution jar in its own JVM with the launcher's flags
 * and environment, CPU runner), with Native Memory Tracking on, snapshotted 5 s after load, after a
 * first run (one 200-word prompt × 64 tokens, a batch-1 decode of 1 + 128 tokens, 8 concurrent
 * requests × 64 tokens: the server's first work, JIT warm-up included), after an idle spell, after
 * the same run again (warm), and after a full GC (the heap's live set, from {@code jcmd
 * GC.class_histogram}). Each snapshot: {@code VmRSS}, {@code RssAnon}/{@code RssFile}, the pages of
 * the Java heap actually resident (from {@code /proc/PID/smaps}), G1's committed and used heap, and
 * NMT's committed total by category; what is resident and anonymous but neither heap nor NMT is
 * memory native libraries allocated themselves (glibc malloc: the tokenizer's Rust library, JavaCPP
 * buffers, OpenBLAS). Also the decode rates of the run and G1's pauses during it (from {@code
 * -Xlog:gc}), so a memory flag's cost in speed shows in the same run.
 *
 * <p>The ratio is issue 12's: RSS / (safetensors bytes + KV cache), the KV cache being FP32 {@code
 * 2 · layers · blocks · 16 · kvHeads · headDim · 4} bytes. NMT's own bookkeeping (~7 MB) is
 * included in RSS; pass {@code --nmt off} for RSS without it (and without the NMT columns).
 *
 * <p>Usage: {@code ServeMemory [--size small|medium|large | --model DIR] [--work
 * /tmp/troupe-vs-llamacpp] [--tokenizer DIR (default: the llama3 test fixture)] [--jar
 * deploy/target/troupe.jar] [--xmx 3g] [--threads 2] [--num-blocks 400] [--idle 30] [--rounds 1]
 * [--nmt summary|off] [--troupe-jvm "OPTIONS"] [--env "K=V K2=V2"] [--write-only true]} ({@code
 * --troupe-jvm} and {@code --env} come after the launcher's and override them: that is how a flag
 * is compared with and without). {@code --size} writes the bench model under {@code --work} first
 * if it is not there (the same seeded generator as {@code VersusLlamaCpp}). Not a test: results go
 * to docs/benchmarks.md.
 */
public final class ServeMemory {
  private static final int MB = 1 << 20;
  private static final ObjectMapper JSON = new ObjectMapper();

  public static void main(String[] args) throws Exception {
    Map<String, String> o = options(args);
    Path work = Path.of(o.getOrDefault("--work", "/tmp/troupe-vs-llamacpp"));
    Path model;
    String name;
    if (o.containsKey("--model")) {
      model = Path.of(o.get("--model"));
      name = model.getFileName().toString();
    } else {
      BenchModel m = BenchModel.size(o.getOrDefault("--size", "small"), work);
      m.ensureSafetensors(
          o.containsKey("--tokenizer")
              ? Path.of(o.get("--tokenizer"))
              : TokenizerFixtures.dir("llama3"));
      model = m.dir();
      name = m.name();
      if (o.containsKey("--write-only")) {
        System.out.println("written: " + model);
        return;
      }
    }
    Path jar = Path.of(o.getOrDefault("--jar", "deploy/target/troupe.jar"));
    int numBlocks = Integer.parseInt(o.getOrDefault("--num-blocks", "400"));
    int idle = Integer.parseInt(o.getOrDefault("--idle", "30"));
    int rounds = Integer.parseInt(o.getOrDefault("--rounds", "1"));
    boolean nmt = !o.getOrDefault("--nmt", "summary").equals("off");
    Files.createDirectories(work);
    Path gcLog = Files.createTempFile(work, name + "-gc", ".log");
    List<String> jvm =
        new ArrayList<>(
            List.of(
                "-Xmx" + o.getOrDefault("--xmx", "3g"),
                "-Dtroupe.worker.engine.num-blocks=" + numBlocks,
                "-Dtroupe.worker.compute.cpu-threads=" + o.getOrDefault("--threads", "2"),
                "-Xlog:gc:file=" + gcLog + ":uptime"));
    if (nmt) jvm.add("-XX:NativeMemoryTracking=summary");
    String extra = o.getOrDefault("--troupe-jvm", "").trim();
    if (!extra.isEmpty()) jvm.addAll(List.of(extra.split("\\s+")));
    Map<String, String> env = new LinkedHashMap<>();
    for (String kv : o.getOrDefault("--env", "").trim().split("\\s+"))
      if (!kv.isEmpty())
        env.put(kv.substring(0, kv.indexOf('=')), kv.substring(kv.indexOf('=') + 1));

    long file = safetensorsBytes(model);
    JsonNode cfg = JSON.readTree(model.resolve("config.json").toFile());
    int layers = cfg.get("num_hidden_layers").asInt(),
        heads = cfg.get("num_attention_heads").asInt();
    int kvHeads = cfg.path("num_key_value_heads").asInt(heads);
    int headDim = cfg.path("head_dim").asInt(cfg.get("hidden_size").asInt() / heads);
    long kv = 2L * layers * numBlocks * 16 * kvHeads * headDim * 4;
    System.out.printf(
        Locale.ROOT,
        "%s: %s; safetensors %d MB + KV cache %d MB = %d MB; load %s; cores %d%n"
            + "troupe jvm extra: %s; env extra: %s; gc log %s%n",
        name,
        model,
        file / MB,
        kv / MB,
        (file + kv) / MB,
        loadAvg(),
        Runtime.getRuntime().availableProcessors(),
        jvm,
        env,
        gcLog);

    Path data = Files.createTempDirectory(work, "data");
    List<Snapshot> snaps = new ArrayList<>();
    try (TroupeServer t =
        TroupeServer.start(
            jar, model, data, jvm, env, List.of(), work.resolve(name + "-memory.log"))) {
      long pid = t.pid();
      Instant started = ProcessHandle.of(pid).flatMap(p -> p.info().startInstant()).orElseThrow();
      Thread.sleep(5000);
      snaps.add(Snapshot.take("load", pid, nmt));
      Words words = new Words();
      // run 1 is the server's first work: it includes the JIT's warm-up, during which the Vector
      // API kernels run unintrinsified and allocate (GB/s for a few seconds); run 2 is warm
      List<String> rates = new ArrayList<>(), gc = new ArrayList<>();
      for (int run = 1; run <= 2; run++) {
        double from = Duration.between(started, Instant.now()).toMillis() / 1e3;
        rates.addAll(run(t, words, rounds, run));
        double to = Duration.between(started, Instant.now()).toMillis() / 1e3;
        gc.add(GcLog.summary(gcLog, from, to));
        Thread.sleep(3000);
        snaps.add(Snapshot.take(run == 1 ? "run 1 (cold)" : "run 2 (warm)", pid, nmt));
        if (run == 1) {
          Thread.sleep(idle * 1000L);
          snaps.add(Snapshot.take("idle " + idle + " s", pid, nmt));
        }
      }
      Histogram live = Histogram.take(pid);
      snaps.add(Snapshot.take("after full GC", pid, nmt));
      print(snaps, file + kv, nmt);
      System.out.printf(
          Locale.ROOT,
          "live heap (full GC): %d MB: int[] %d MB, float[] %d MB, byte[] %d MB, rest %d MB%n",
          live.total / MB,
          live.of("[I") / MB,
          live.of("[F") / MB,
          live.of("[B") / MB,
          (live.total - live.of("[I") - live.of("[F") - live.of("[B")) / MB);
      for (String r : rates) System.out.println(r);
      for (int r = 0; r < gc.size(); r++)
        System.out.printf(Locale.ROOT, "G1 during run %d: %s%n", r + 1, gc.get(r));
      System.out.println("load average at the end: " + loadAvg());
    }
    System.exit(0);
  }

  /**
   * One 200-word prompt × 64 tokens (prefill on GEMM), then per round a batch-1 decode (1 + 128
   * tokens against 1) and 8 concurrent streams × 64 tokens; returns the rates.
   */
  private static List<String> run(TroupeServer t, Words words, int rounds, int run)
      throws Exception {
    t.chat(words.text(200, run), 64, false);
    List<String> rates = new ArrayList<>();
    for (int r = 0; r < rounds; r++) {
      int seed = 1000 * run + 20 * r;
      String a = words.text(32, seed), b = words.text(32, seed + 1);
      double t1 = time(() -> t.chat(a, 1, false));
      double tn = time(() -> t.chat(b, 1 + 128, false));
      double t8 = concurrent(8, i -> t.chat(words.text(32, seed + 2 + i), 64, true));
      rates.add(
          String.format(
              Locale.ROOT,
              "run %d round %d: batch-1 decode %.1f tok/s, 8 concurrent %.1f tok/s",
              run,
              r + 1,
              128 / (tn - t1),
              8 * 64 / t8));
    }
    return rates;
  }

  private static void print(List<Snapshot> snaps, long fileKv, boolean nmt) {
    List<String> rows =
        new ArrayList<>(List.of("VmRSS", "RSS / (file + KV)", "RssAnon", "RssFile"));
    rows.addAll(List.of("heap committed", "heap used", "heap resident"));
    if (nmt) {
      rows.add("NMT committed, heap excluded");
      for (String c : Snapshot.CATEGORIES) rows.add("  " + c);
      rows.add("  NMT malloc (included above)");
      rows.add("native outside NMT (RssAnon - heap res. - NMT)");
    }
    StringBuilder head = new StringBuilder(String.format(Locale.ROOT, "%-48s", "MB"));
    for (Snapshot s : snaps) head.append(String.format(Locale.ROOT, "%16s", s.phase));
    System.out.println(head);
    for (String row : rows) {
      StringBuilder line = new StringBuilder(String.format(Locale.ROOT, "%-48s", row));
      for (Snapshot s : snaps) {
        String cell =
            row.startsWith("RSS /")
                ? String.format(Locale.ROOT, "%.2f", (double) s.kb.get("VmRSS") * 1024 / fileKv)
                : Long.toString(s.value(row) / 1024);
        line.append(String.format(Locale.ROOT, "%16s", cell));
      }
      System.out.println(line);
    }
  }

  /** One moment's figures, kB. */
  private record Snapshot(String phase, Map<String, Long> kb) {
    static final List<String> CATEGORIES =
        List.of(
            "Class",
            "Metaspace",
            "Shared class space",
            "Thread",
            "Code",
            "GC",
            "Symbol",
            "Other",
            "Internal",
            "Arena Chunk",
            "Compiler",
            "Native Memory Tracking");
    private static final Pattern NMT_LINE =
        Pattern.compile("^-\\s+(.+?) \\(reserved=(\\d+)KB, committed=(\\d+)KB\\)");
    private static final Pattern HEAP =
        // "total 980992K, used ..." (JDK 17), "total reserved ..., committed 980992K, used ..."
        // (21+)
        Pattern.compile(
            "(?:total|committed) (\\d+)K, used (\\d+)K \\[0x([0-9a-f]+), 0x([0-9a-f]+)\\)");

    static Snapshot take(String phase, long pid, boolean nmt) throws Exception {
      Map<String, Long> kb = new LinkedHashMap<>();
      for (String line : Files.readAllLines(Path.of("/proc/" + pid + "/status")))
        for (String k : List.of("VmRSS", "RssAnon", "RssFile"))
          if (line.startsWith(k + ":")) kb.put(k, Long.parseLong(line.replaceAll("[^0-9]", "")));
      Matcher h = HEAP.matcher(jcmd(pid, "GC.heap_info"));
      if (!h.find()) throw new IllegalStateException("no heap line in GC.heap_info");
      kb.put("heap committed", Long.parseLong(h.group(1)));
      kb.put("heap used", Long.parseLong(h.group(2)));
      kb.put(
          "heap resident",
          residentWithin(
              pid, Long.parseUnsignedLong(h.group(3), 16), Long.parseUnsignedLong(h.group(4), 16)));
      if (nmt) {
        long total = 0;
        for (String line : jcmd(pid, "VM.native_memory summary").split("\n")) {
          Matcher m = NMT_LINE.matcher(line.trim());
          if (m.find() && !m.group(1).equals("Java Heap")) {
            long c = Long.parseLong(m.group(3));
            total += c;
            kb.merge("  " + m.group(1), c, Long::sum);
          }
          if (line.trim().startsWith("malloc:"))
            kb.putIfAbsent(
                "  NMT malloc (included above)",
                Long.parseLong(line.trim().replaceAll("^malloc: (\\d+)KB.*", "$1")));
        }
        kb.put("NMT committed, heap excluded", total);
        kb.put(
            "native outside NMT (RssAnon - heap res. - NMT)",
            kb.get("RssAnon") - kb.get("heap resident") - total);
      }
      System.out.printf(Locale.ROOT, "snapshot %s: VmRSS %d MB%n", phase, kb.get("VmRSS") / 1024);
      return new Snapshot(phase, kb);
    }

    long value(String row) {
      return kb.getOrDefault(row, 0L);
    }

    /** Resident kB of the mappings inside [from, to) (the Java heap's reserved range). */
    private static long residentWithin(long pid, long from, long to) throws IOException {
      long rss = 0;
      boolean inside = false;
      for (String line : Files.readAllLines(Path.of("/proc/" + pid + "/smaps"))) {
        int dash = line.indexOf('-');
        if (dash > 0
            && line.indexOf(' ') > dash
            && Character.isLetterOrDigit(line.charAt(0))
            && line.substring(0, dash).matches("[0-9a-f]+")) {
          long start = Long.parseUnsignedLong(line.substring(0, dash), 16);
          inside = Long.compareUnsigned(start, from) >= 0 && Long.compareUnsigned(start, to) < 0;
        } else if (inside && line.startsWith("Rss:")) {
          rss += Long.parseLong(line.replaceAll("[^0-9]", ""));
        }
      }
      return rss;
    }
  }

  /** The live heap by class, bytes, after the full GC that {@code GC.class_histogram} runs. */
  private record Histogram(long total, Map<String, Long> bytes) {
    static Histogram take(long pid) throws Exception {
      Map<String, Long> bytes = new LinkedHashMap<>();
      long total = 0;
      for (String line : jcmd(pid, "GC.class_histogram").split("\n")) {
        String[] f = line.trim().split("\\s+");
        if (f.length >= 4 && f[0].endsWith(":")) bytes.put(f[3], Long.parseLong(f[2]));
        if (f.length >= 3 && f[0].equals("Total")) total = Long.parseLong(f[2]);
      }
      return new Histogram(total, bytes);
    }

    long of(String cls) {
      return bytes.getOrDefault(cls, 0L);
    }
  }

  /** G1's pauses between two uptimes, from an {@code -Xlog:gc:file=...:uptime} log. */
  private static final class GcLog {
    private static final Pattern PAUSE =
        Pattern.compile(
            "^\\[(\\d+\\.\\d+)s\\].*(Pause \\S+).* (\\d+)M->(\\d+)M\\((\\d+)M\\) (\\d+\\.\\d+)ms");

    static String summary(Path log, double from, double to) throws IOException {
      int n = 0;
      double sum = 0, max = 0;
      Map<String, Integer> kinds = new LinkedHashMap<>();
      try (Stream<String> lines = Files.lines(log)) {
        for (String line : (Iterable<String>) lines::iterator) {
          Matcher m = PAUSE.matcher(line);
          if (!m.find()) continue;
          double at = Double.parseDouble(m.group(1));
          if (at < from || at > to) continue;
          double ms = Double.parseDouble(m.group(6));
          n++;
          sum += ms;
          max = Math.max(max, ms);
          kinds.merge(m.group(2), 1, Integer::sum);
        }
      }
      return String.format(
          Locale.ROOT,
          "%d pauses %s in %.1f s, %.1f ms in total (%.2f%% of the wall), longest %.1f ms",
          n,
          kinds,
          to - from,
          sum,
          sum / 10 / (to - from),
          max);
    }
  }

  /** Distinct English-word prompts. */
  private static final class Words {
    private static final String[] WORDS =
        ("the of and to in is you that it he was for on are as with his they at be this have from"
                + " or one had by word but not what all were we when your can said there use an each"
                + " which she do how their if will up other about out many then them these so some"
                + " her would make like him into time has look two more write go see number no way"
                + " could people my than first water been call who oil its now find long down day did"
                + " get come made may part")
            .split(" ");

    String text(int n, int seed) {
      Random r = new Random(seed);
      StringBuilder s = new StringBuilder();
      for (int i = 0; i < n; i++)
        s.append(i == 0 ? "" : " ").append(WORDS[r.nextInt(WORDS.length)]);
      return s.toString();
    }
  }

  private interface Job {
    int run(int i) throws Exception;
  }

  private interface Call {
    void run() throws Exception;
  }

  private static double time(Call c) throws Exception {
    long t0 = System.nanoTime();
    c.run();
    return (System.nanoTime() - t0) / 1e9;
  }

  private static double concurrent(int n, Job job) throws Exception {
    ExecutorService ex = Executors.newFixedThreadPool(n);
    try {
      List<Future<Integer>> fs = new ArrayList<>();
      long t0 = System.nanoTime();
      for (int i = 0; i < n; i++) {
        int id = i;
        fs.add(ex.submit(() -> job.run(id)));
      }
      for (Future<Integer> f : fs) f.get();
      return (System.nanoTime() - t0) / 1e9;
    } finally {
      ex.shutdown();
    }
  }

  private static String jcmd(long pid, String command) throws Exception {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "jcmd").toString());
    cmd.add(Long.toString(pid));
    cmd.addAll(Arrays.asList(command.split(" ")));
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String out =
        new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
    if (p.waitFor() != 0) throw new IOException("jcmd " + command + ": " + out);
    return out;
  }

  private static long safetensorsBytes(Path dir) throws IOException {
    try (Stream<Path> files = Files.list(dir)) {
      return files
          .filter(f -> f.toString().endsWith(".safetensors"))
          .mapToLong(f -> f.toFile().length())
          .sum();
    }
  }

  private static String loadAvg() throws IOException {
    return Files.readString(Path.of("/proc/loadavg")).trim();
  }

  private static Map<String, String> options(String[] args) {
    Map<String, String> o = new LinkedHashMap<>();
    for (int i = 0; i + 1 < args.length; i += 2) o.put(args[i], args[i + 1]);
    if (args.length % 2 != 0)
      throw new IllegalArgumentException("options come in pairs: " + Arrays.toString(args));
    return o;
  }
}
