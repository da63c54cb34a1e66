package dev.troupe.bench.structured;

import dev.troupe.engine.structured.GrammarCache;
import dev.troupe.engine.structured.StructuredOutputCompiler;
import dev.troupe.engine.structured.TokenVocabularies;
import dev.troupe.engine.structured.grammar.AutomatonCompiler;
import dev.troupe.engine.structured.grammar.CompiledGrammar;
import dev.troupe.engine.structured.grammar.Grammar;
import dev.troupe.engine.structured.grammar.GrammarMatcher;
import dev.troupe.engine.structured.grammar.Limits;
import dev.troupe.engine.structured.grammar.TokenVocabulary;
import dev.troupe.engine.structured.syntax.RegexParser;
import dev.troupe.engine.tokenizer.HfTokenizer;
import dev.troupe.engine.tokenizer.TokenizerFixtures;
import dev.troupe.protocol.cluster.StructuredOutputsParams;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

/**
 * The grammar engine on Qwen3's vocabulary (151,669 tokens, logits row 151,936): compile time of
 * JSON schemas, regexes and a GBNF grammar, and the per-token cost during decoding (mask fill +
 * applying it to a logits row + accepting the token) along random walks. Also regex → DFA against
 * dk.brics.automaton, the JVM automaton library considered for regexes.
 *
 * <p>Run: {@code java -cp ... dev.troupe.bench.structured.GrammarBench [tokenizer-dir]} (default:
 * the qwen3 test fixture, {@code TokenizerFixtures}). Thread-CPU times (a busy machine skews them
 * less than wall time); medians of repeated runs.
 */
public final class GrammarBench {

  private static final ThreadMXBean CPU = ManagementFactory.getThreadMXBean();

  static final String NESTED_SCHEMA =
      """
      {"type":"object","properties":{
        "id":{"type":"string","format":"uuid"},
        "name":{"type":"string","maxLength":40},
        "age":{"type":"integer","minimum":0,"maximum":150},
        "email":{"type":"string","format":"email"},
        "score":{"type":"number","minimum":0,"maximum":1},
        "status":{"enum":["active","inactive","banned"]},
        "tags":{"type":"array","items":{"type":"string"},"maxItems":8},
        "address":{"type":"object","properties":{
          "street":{"type":"string"},"city":{"type":"string"},
          "zip":{"type":"string","pattern":"^[0-9]{5}(-[0-9]{4})?$"},
          "geo":{"type":"object","properties":{"lat":{"type":"number"},"lon":{"type":"number"}},
                 "required":["lat","lon"]}},
          "required":["street","city"]},
        "orders":{"type":"array","items":{"$ref":"#/$defs/order"}},
        "manager":{"anyOf":[{"$ref":"#"},{"type":"null"}]}},
       "required":["id","name","age","status"],
       "$defs":{"order":{"type":"object","properties":{
          "sku":{"type":"string"},"qty":{"type":"integer","minimum":1},
          "items":{"type":"array","items":{"$ref":"#/$defs/order"}}},"required":["sku","qty"]}}}
      """;

  /** What a tool's parameters typically look like. */
  static final String FUNCTION_SCHEMA =
      """
      {"type":"object","properties":{
        "location":{"type":"string","description":"City and country"},
        "unit":{"enum":["celsius","fahrenheit"]},
        "days":{"type":"integer","minimum":1,"maximum":14}},
       "required":["location"]}
      """;

  private GrammarBench() {}

  public static void main(String[] args) {
    Path dir = args.length > 0 ? Path.of(args[0]) : TokenizerFixtures.dir("qwen3");
    long t0 = System.nanoTime();
    HfTokenizer tok = HfTokenizer.load(dir.resolve("tokenizer.json"), false);
    long t1 = System.nanoTime();
    TokenVocabulary v = TokenVocabularies.of(tok, 151_936, List.of(151_645, 151_643));
    long t2 = System.nanoTime();
    System.out.printf(
        "tokenizer load %.0f ms, vocabulary (bytes + trie of %d tokens) %.0f ms%n",
        (t1 - t0) / 1e6, v.tokensWithBytes(), (t2 - t1) / 1e6);

    List<Case> cases =
        List.of(
            new Case(
                "function-call schema (3 fields)",
                StructuredOutputsParams.json(FUNCTION_SCHEMA, "x")),
            new Case("nested JSON schema", StructuredOutputsParams.json(NESTED_SCHEMA, "x")),
            new Case(
                "nested JSON schema, compact",
                StructuredOutputsParams.json(NESTED_SCHEMA, "x")
                    .withJsonOptions(true, false, null)),
            new Case("json_object", StructuredOutputsParams.jsonObject("x")),
            new Case(
                "regex phone",
                StructuredOutputsParams.regex("\\(?[0-9]{3}\\)?[ -]?[0-9]{3}-[0-9]{4}", "x")),
            new Case(
                "regex (a+)+$ (backtracking bomb)", StructuredOutputsParams.regex("(a+)+$", "x")),
            new Case(
                "choice of 4",
                StructuredOutputsParams.choice(
                    List.of("positive", "negative", "neutral", "mixed"), "x")),
            new Case(
                "GBNF arithmetic",
                StructuredOutputsParams.grammar(
                    "root ::= expr\nexpr ::= term ((\"+\"|\"-\") term)*\nterm ::= num | \"(\" expr \")\"\nnum ::= [0-9]+",
                    "x")));
    System.out.println();
    System.out.println(
        "| grammar | DFA states | compile, 1 thread / 2 threads (median of 5, CPU ms / wall ms) | tables (KiB)"
            + " | mask + accept per token (median / p99 µs) | + masking a 151,936 row (median µs) |");
    System.out.println("|---|---|---|---|---|---|");
    for (Case c : cases) run(c, v);

    System.out.println();
    System.out.println(
        "regex -> minimal DFA, ours vs dk.brics.automaton (median of 20, µs; states):");
    compareRegexes();
  }

  private record Case(String label, StructuredOutputsParams params) {}

  private static final java.util.concurrent.ExecutorService HELPERS =
      java.util.concurrent.Executors.newFixedThreadPool(
          1,
          r -> {
            Thread t = new Thread(r, "grammar-helper");
            t.setDaemon(true);
            return t;
          });

  private static void run(Case c, TokenVocabulary v) {
    long[] compile = new long[5];
    long[] wall2 = new long[5];
    CompiledGrammar g = null;
    for (int i = 0; i < compile.length; i++) {
      // a fresh cache each time: measure the compile, not the lookup
      StructuredOutputCompiler compiler =
          new StructuredOutputCompiler(v, Limits.defaults(), new GrammarCache(0, 0));
      long a = CPU.getCurrentThreadCpuTime();
      g = compiler.compile(c.params());
      compile[i] = CPU.getCurrentThreadCpuTime() - a;
      StructuredOutputCompiler two =
          new StructuredOutputCompiler(v, Limits.defaults(), new GrammarCache(0, 0), HELPERS, 2);
      long w = System.nanoTime();
      two.compile(c.params());
      wall2[i] = System.nanoTime() - w;
    }
    Arrays.sort(compile);
    Arrays.sort(wall2);
    long[][] perToken = walks(g, v);
    System.out.printf(
        "| %s | %d | %.1f / %.1f | %d | %.1f / %.1f | %.1f |%n",
        c.label(),
        g.automaton().states(),
        compile[compile.length / 2] / 1e6,
        wall2[wall2.length / 2] / 1e6,
        g.bytes() / 1024,
        perToken[0][perToken[0].length / 2] / 1e3,
        perToken[0][(int) (perToken[0].length * 0.99)] / 1e3,
        perToken[1][perToken[1].length / 2] / 1e3);
  }

  /**
   * Random decoding walks: per step fill the mask and accept a token (times[0]), and separately
   * apply the mask to a logits row (times[1]).
   */
  private static long[][] walks(CompiledGrammar g, TokenVocabulary v) {
    Random r = new Random(1);
    int words = (v.size() + 63) / 64;
    long[] mask = new long[words];
    float[] logits = new float[v.size()];
    long[] times = new long[4000];
    long[] applyTimes = new long[4000];
    int n = 0;
    int[] allowed = new int[v.size()];
    while (n < times.length) {
      GrammarMatcher m = g.newMatcher();
      for (int step = 0; step < 200 && n < times.length; step++) {
        for (int i = 0; i < logits.length; i++) logits[i] = (float) r.nextGaussian();
        long a = CPU.getCurrentThreadCpuTime();
        m.fillNextTokenMask(mask);
        long b = CPU.getCurrentThreadCpuTime();
        int k = apply(mask, logits, allowed);
        long c = CPU.getCurrentThreadCpuTime();
        int pick = allowed[r.nextInt(k)];
        boolean stop = !m.accept(pick) || m.isTerminated();
        long d = CPU.getCurrentThreadCpuTime();
        times[n] = (b - a) + (d - c);
        applyTimes[n++] = c - b;
        if (stop) break;
      }
    }
    Arrays.sort(times);
    Arrays.sort(applyTimes);
    return new long[][] {times, applyTimes};
  }

  /** Masks the logits (-inf where not allowed) and lists the allowed ids. */
  private static int apply(long[] mask, float[] logits, int[] allowed) {
    int k = 0;
    for (int w = 0; w < mask.length; w++) {
      long bits = mask[w];
      int base = w << 6;
      int end = Math.min(64, logits.length - base);
      if (bits == -1L) {
        for (int i = 0; i < end; i++) allowed[k++] = base + i;
        continue;
      }
      for (int i = 0; i < end; i++) {
        if ((bits & (1L << i)) == 0) logits[base + i] = Float.NEGATIVE_INFINITY;
        else allowed[k++] = base + i;
      }
    }
    return k;
  }

  private static void compareRegexes() {
    // in the syntax both accept (dk.brics has no \d, so classes are spelled out)
    String[] patterns = {
      "[a-z]{3,12}@[a-z]{2,10}\\.(com|org|net)",
      "(a|b)*a(a|b){10}",
      "([0-9]{4}-[0-9]{2}-[0-9]{2})T([0-9]{2}:[0-9]{2})",
      "(x+x+)+y",
      "[^\"]{0,200}"
    };
    for (String p : patterns) {
      long[] ours = new long[20];
      long[] theirs = new long[20];
      int ourStates = 0;
      int theirStates = 0;
      for (int i = 0; i < 20; i++) {
        long a = CPU.getCurrentThreadCpuTime();
        ourStates =
            AutomatonCompiler.compile(Grammar.of(RegexParser.parse(p)), Limits.defaults()).states();
        ours[i] = CPU.getCurrentThreadCpuTime() - a;
        a = CPU.getCurrentThreadCpuTime();
        dk.brics.automaton.Automaton d =
            new dk.brics.automaton.RegExp(p, dk.brics.automaton.RegExp.NONE).toAutomaton(true);
        theirStates = d.getNumberOfStates();
        theirs[i] = CPU.getCurrentThreadCpuTime() - a;
      }
      Arrays.sort(ours);
      Arrays.sort(theirs);
      System.out.printf(
          "  %-50s ours %8.1f µs %6d byte-level states | dk.brics %8.1f µs %6d char states%n",
          p, ours[10] / 1e3, ourStates, theirs[10] / 1e3, theirStates);
    }
  }
}
