package dev.troupe.engine.structured.grammar;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Operations on sets of code points (or bytes) kept as sorted inclusive range pairs {@code lo0,
 * hi0, lo1, hi1, …}. Used by the front ends to build {@link Expr.CharSet}s (negated classes, {@code
 * \w}, JSON-escapable characters…).
 */
public final class CodePointSet {

  public static final int MAX_CODE_POINT = 0x10FFFF;

  /** Every code point except the UTF-16 surrogates (which UTF-8 cannot encode). */
  public static final int[] ALL = {0, 0xD7FF, 0xE000, MAX_CODE_POINT};

  private CodePointSet() {}

  /** Sorts and merges overlapping or adjacent pairs. */
  public static int[] normalize(int[] ranges) {
    if (ranges.length % 2 != 0) throw new IllegalArgumentException("odd range array");
    int n = ranges.length / 2;
    long[] pairs = new long[n];
    for (int i = 0; i < n; i++) {
      int lo = ranges[2 * i];
      int hi = ranges[2 * i + 1];
      if (lo > hi || lo < 0) throw new IllegalArgumentException("bad range " + lo + ".." + hi);
      pairs[i] = ((long) lo << 32) | hi;
    }
    Arrays.sort(pairs);
    List<int[]> out = new ArrayList<>();
    for (long p : pairs) {
      int lo = (int) (p >>> 32);
      int hi = (int) p;
      if (!out.isEmpty() && lo <= out.get(out.size() - 1)[1] + 1) {
        int[] last = out.get(out.size() - 1);
        last[1] = Math.max(last[1], hi);
      } else {
        out.add(new int[] {lo, hi});
      }
    }
    int[] r = new int[out.size() * 2];
    for (int i = 0; i < out.size(); i++) {
      r[2 * i] = out.get(i)[0];
      r[2 * i + 1] = out.get(i)[1];
    }
    return r;
  }

  public static int[] of(int... ranges) {
    return normalize(ranges);
  }

  public static int[] union(int[] a, int[] b) {
    int[] c = Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, c, a.length, b.length);
    return normalize(c);
  }

  /** The complement within {@link #ALL} (so surrogates never appear). */
  public static int[] complement(int[] a) {
    return subtract(ALL, a);
  }

  /** a minus b. */
  public static int[] subtract(int[] a, int[] b) {
    a = normalize(a);
    b = normalize(b);
    List<Integer> out = new ArrayList<>();
    for (int i = 0; i < a.length; i += 2) {
      int lo = a[i];
      int hi = a[i + 1];
      for (int j = 0; j < b.length && lo <= hi; j += 2) {
        int blo = b[j];
        int bhi = b[j + 1];
        if (bhi < lo || blo > hi) continue;
        if (blo > lo) {
          out.add(lo);
          out.add(blo - 1);
        }
        lo = bhi + 1;
      }
      if (lo <= hi) {
        out.add(lo);
        out.add(hi);
      }
    }
    return normalize(out.stream().mapToInt(Integer::intValue).toArray());
  }

  public static int[] intersect(int[] a, int[] b) {
    return subtract(a, subtract(a, b));
  }

  public static boolean contains(int[] set, int cp) {
    for (int i = 0; i < set.length; i += 2) if (cp >= set[i] && cp <= set[i + 1]) return true;
    return false;
  }

  public static boolean isEmpty(int[] set) {
    return set.length == 0;
  }

  /** ASCII case folding of a set: adds the other case of every ASCII letter in it. */
  public static int[] caseInsensitive(int[] set) {
    List<Integer> extra = new ArrayList<>();
    for (int c = 'A'; c <= 'Z'; c++) {
      if (contains(set, c)) {
        extra.add(c + 32);
        extra.add(c + 32);
      }
      if (contains(set, c + 32)) {
        extra.add(c);
        extra.add(c);
      }
    }
    return union(set, extra.stream().mapToInt(Integer::intValue).toArray());
  }
}
