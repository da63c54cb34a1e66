package dev.troupe.engine.structured.grammar;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

/** Random walks over token masks, and the brute-force mask the engine's must equal. */
public final class Walks {

  private Walks() {}

  /** What a walk produced. */
  public record Walk(byte[] bytes, List<Integer> tokens, boolean terminated) {
    public String text() {
      return new String(bytes, java.nio.charset.StandardCharsets.UTF_8);
    }
  }

  /**
   * Samples uniformly among allowed tokens (the stop token with probability {@code stopBias} when
   * it is allowed) for at most {@code maxTokens} tokens.
   */
  public static Walk walk(CompiledGrammar g, Random r, int maxTokens, double stopBias) {
    return walk(g, r, maxTokens, stopBias, null, 0);
  }

  /**
   * As {@link #walk(CompiledGrammar, Random, int, double)}, but with probability {@code preferP}
   * picks among allowed tokens containing one of the {@code prefer} bytes (e.g. closing quotes and
   * brackets, so that JSON walks finish), when there are some.
   */
  public static Walk walk(
      CompiledGrammar g, Random r, int maxTokens, double stopBias, byte[] prefer, double preferP) {
    return walk(g, new int[0], r, maxTokens, stopBias, prefer, preferP);
  }

  /** A walk that starts after the given tokens (which must be allowed; included in the output). */
  public static Walk walk(
      CompiledGrammar g,
      int[] start,
      Random r,
      int maxTokens,
      double stopBias,
      byte[] prefer,
      double preferP) {
    GrammarMatcher m = feed(g, start);
    TokenVocabulary v = g.vocabulary();
    int words = (v.size() + 63) / 64;
    long[] mask = new long[words];
    long[] stops = new long[words];
    for (int t : v.stopTokens()) stops[t >>> 6] |= 1L << t;
    long[] preferred = prefer == null ? null : containing(v, prefer);
    long[] tmp = new long[words];
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    List<Integer> tokens = new ArrayList<>();
    for (int t : start) {
      tokens.add(t);
      out.writeBytes(v.bytes(t));
    }
    for (int step = 0; step < maxTokens; step++) {
      m.fillNextTokenMask(mask);
      int normal = 0;
      int stopCount = 0;
      for (int w = 0; w < words; w++) {
        normal += Long.bitCount(mask[w] & ~stops[w]);
        stopCount += Long.bitCount(mask[w] & stops[w]);
      }
      assertTrue(normal + stopCount > 0, "a live matcher always allows some token");
      int pick;
      if (stopCount > 0 && (normal == 0 || r.nextDouble() < stopBias)) {
        pick = nth(mask, stops, false, r.nextInt(stopCount));
      } else {
        int chosen = -1;
        if (preferred != null && r.nextDouble() < preferP) {
          int n = 0;
          for (int w = 0; w < words; w++)
            n += Long.bitCount(tmp[w] = mask[w] & ~stops[w] & preferred[w]);
          if (n > 0) chosen = nth(tmp, null, false, r.nextInt(n));
        }
        pick = chosen >= 0 ? chosen : nth(mask, stops, true, r.nextInt(normal));
      }
      assertTrue(m.accept(pick), "an allowed token is accepted");
      tokens.add(pick);
      if (m.isTerminated()) return new Walk(out.toByteArray(), tokens, true);
      out.writeBytes(v.bytes(pick));
    }
    return new Walk(out.toByteArray(), tokens, false);
  }

  /** The k-th set bit of mask (restricted to / excluding {@code filter} when given). */
  private static int nth(long[] mask, long[] filter, boolean exclude, int k) {
    for (int w = 0; w < mask.length; w++) {
      long x = filter == null ? mask[w] : exclude ? mask[w] & ~filter[w] : mask[w] & filter[w];
      int c = Long.bitCount(x);
      if (k >= c) {
        k -= c;
        continue;
      }
      while (k-- > 0) x &= x - 1;
      return (w << 6) + Long.numberOfTrailingZeros(x);
    }
    throw new IllegalStateException("fewer bits than expected");
  }

  private static final java.util.Map<String, long[]> CONTAINING =
      new java.util.concurrent.ConcurrentHashMap<>();

  private static long[] containing(TokenVocabulary v, byte[] any) {
    String key = System.identityHashCode(v) + Arrays.toString(any);
    return CONTAINING.computeIfAbsent(
        key,
        k -> {
          long[] bits = new long[(v.size() + 63) / 64];
          for (int id = 0; id < v.size(); id++) {
            byte[] b = v.bytes(id);
            if (b != null && containsAny(b, any)) bits[id >>> 6] |= 1L << id;
          }
          return bits;
        });
  }

  private static boolean containsAny(byte[] bytes, byte[] any) {
    for (byte b : bytes) for (byte a : any) if (a == b) return true;
    return false;
  }

  /** Feeds tokens one by one, asserting each is in the mask; returns the matcher. */
  public static GrammarMatcher feed(CompiledGrammar g, int[] tokens) {
    GrammarMatcher m = g.newMatcher();
    long[] mask = new long[(g.vocabulary().size() + 63) / 64];
    for (int i = 0; i < tokens.length; i++) {
      m.fillNextTokenMask(mask);
      int t = tokens[i];
      assertTrue(
          (mask[t >>> 6] & (1L << t)) != 0, "token " + i + " (id " + t + ") must be allowed");
      assertTrue(m.accept(t), "token " + i + " (id " + t + ") must be accepted");
    }
    return m;
  }

  /** The set bits of a mask. */
  public static int[] bits(long[] mask) {
    int n = 0;
    for (long w : mask) n += Long.bitCount(w);
    int[] r = new int[n];
    int k = 0;
    for (int w = 0; w < mask.length; w++) {
      long x = mask[w];
      while (x != 0) {
        r[k++] = (w << 6) + Long.numberOfTrailingZeros(x);
        x &= x - 1;
      }
    }
    return r;
  }

  /**
   * The allowed tokens after {@code prefix}, by brute force over the automaton's own string
   * matcher: a token is allowed when prefix + its bytes is a prefix of the language.
   */
  public static int[] bruteForce(CompiledGrammar g, byte[] prefix) {
    TokenVocabulary v = g.vocabulary();
    Automaton a = g.automaton();
    List<Integer> ok = new ArrayList<>();
    for (int id = 0; id < v.size(); id++) {
      if (v.isStop(id)) {
        if (a.matches(prefix)) ok.add(id);
        continue;
      }
      byte[] b = v.bytes(id);
      if (b == null) continue;
      byte[] all = Arrays.copyOf(prefix, prefix.length + b.length);
      System.arraycopy(b, 0, all, prefix.length, b.length);
      if (a.isPrefix(all)) ok.add(id);
    }
    return ok.stream().mapToInt(Integer::intValue).toArray();
  }

  /** Walks randomly and compares every step's mask with {@link #bruteForce}. */
  public static void checkMasksAlongWalk(CompiledGrammar g, Random r, int steps) {
    GrammarMatcher m = g.newMatcher();
    TokenVocabulary v = g.vocabulary();
    long[] mask = new long[(v.size() + 63) / 64];
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (int step = 0; step < steps; step++) {
      m.fillNextTokenMask(mask);
      int[] got = bits(mask);
      int[] want = bruteForce(g, out.toByteArray());
      assertEquals(
          Arrays.toString(want), Arrays.toString(got), "mask after " + out.toString() + "");
      int[] normal = Arrays.stream(got).filter(t -> !v.isStop(t)).toArray();
      if (normal.length == 0) return;
      int pick = normal[r.nextInt(normal.length)];
      assertTrue(m.accept(pick));
      out.writeBytes(v.bytes(pick));
    }
  }
}
