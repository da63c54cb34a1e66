package dev.troupe.engine.structured.grammar;

import java.util.ArrayList;
import java.util.List;

/**
 * Splits a code point range into UTF-8 byte-range sequences: each result is a list of {@code {lo,
 * hi}} byte ranges whose product is exactly the UTF-8 encodings of a sub-range (the classic
 * construction of RE2 and Rust's utf8-ranges). Surrogates are skipped.
 */
final class Utf8Ranges {

  private Utf8Ranges() {}

  /** The sequences of one code point set (sorted range pairs). */
  static List<int[][]> of(int[] ranges) {
    List<int[][]> out = new ArrayList<>();
    int[] valid = CodePointSet.intersect(ranges, CodePointSet.ALL);
    for (int i = 0; i < valid.length; i += 2) split(valid[i], valid[i + 1], out);
    return out;
  }

  private static final int[] MAX_OF_LENGTH = {0x7F, 0x7FF, 0xFFFF, 0x10FFFF};

  private static void split(int lo, int hi, List<int[][]> out) {
    if (lo > hi) return;
    // different encoded lengths: cut at the boundary
    for (int max : MAX_OF_LENGTH) {
      if (lo <= max && hi > max) {
        split(lo, max, out);
        split(max + 1, hi, out);
        return;
      }
    }
    if (hi <= 0x7F) {
      out.add(new int[][] {{lo, hi}});
      return;
    }
    int n = length(lo);
    for (int i = 1; i < n; i++) {
      int m = (1 << (6 * i)) - 1;
      if ((lo & ~m) != (hi & ~m)) {
        if ((lo & m) != 0) {
          split(lo, lo | m, out);
          split((lo | m) + 1, hi, out);
          return;
        }
        if ((hi & m) != m) {
          split(lo, (hi & ~m) - 1, out);
          split(hi & ~m, hi, out);
          return;
        }
      }
    }
    byte[] a = encode(lo);
    byte[] b = encode(hi);
    int[][] seq = new int[n][];
    for (int i = 0; i < n; i++) seq[i] = new int[] {a[i] & 0xFF, b[i] & 0xFF};
    out.add(seq);
  }

  private static int length(int cp) {
    return cp <= 0x7F ? 1 : cp <= 0x7FF ? 2 : cp <= 0xFFFF ? 3 : 4;
  }

  static byte[] encode(int cp) {
    return new String(Character.toChars(cp)).getBytes(java.nio.charset.StandardCharsets.UTF_8);
  }
}
