package dev.troupe.engine.structured.grammar;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * A rule body of a {@link Grammar}: what every front end (JSON Schema, regex, GBNF, choice,
 * structural tags) compiles to. Terminals are over bytes; {@link CharSet}s are sets of Unicode code
 * points that the automaton compiler turns into UTF-8 byte sequences.
 */
public sealed interface Expr {

  /** The empty string. */
  record Empty() implements Expr {}

  /** A literal byte string. */
  record Bytes(byte[] bytes) implements Expr {
    public Bytes {
      bytes = bytes.clone();
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof Bytes b && Arrays.equals(bytes, b.bytes);
    }

    @Override
    public int hashCode() {
      return Arrays.hashCode(bytes);
    }

    @Override
    public String toString() {
      return "Bytes[" + new String(bytes, StandardCharsets.UTF_8) + "]";
    }
  }

  /**
   * One code point out of a set: {@code ranges} holds sorted, disjoint, non-adjacent inclusive
   * pairs {@code lo0, hi0, lo1, hi1, …} within 0..0x10FFFF (surrogates are never produced).
   */
  record CharSet(int[] ranges) implements Expr {
    public CharSet {
      ranges = CodePointSet.normalize(ranges);
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof CharSet c && Arrays.equals(ranges, c.ranges);
    }

    @Override
    public int hashCode() {
      return Arrays.hashCode(ranges);
    }

    @Override
    public String toString() {
      return "CharSet" + Arrays.toString(ranges);
    }
  }

  /** One raw byte out of a set ({@code lo, hi} inclusive pairs, 0..255). */
  record ByteSet(int[] ranges) implements Expr {
    public ByteSet {
      ranges = CodePointSet.normalize(ranges);
      if (ranges.length > 0 && (ranges[0] < 0 || ranges[ranges.length - 1] > 255))
        throw new IllegalArgumentException("byte ranges outside 0..255");
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof ByteSet c && Arrays.equals(ranges, c.ranges);
    }

    @Override
    public int hashCode() {
      return Arrays.hashCode(ranges);
    }
  }

  /** Concatenation. */
  record Seq(List<Expr> items) implements Expr {
    public Seq {
      items = List.copyOf(items);
    }
  }

  /** Alternation (an empty list matches nothing). */
  record Alt(List<Expr> options) implements Expr {
    public Alt {
      options = List.copyOf(options);
    }
  }

  /** {@code body{min,max}}; {@code max} = {@link #UNBOUNDED} for no upper bound. */
  record Repeat(Expr body, int min, int max) implements Expr {
    public static final int UNBOUNDED = -1;

    public Repeat {
      if (min < 0 || (max != UNBOUNDED && max < min))
        throw new IllegalArgumentException("bad repetition {" + min + "," + max + "}");
    }
  }

  /** A reference to another rule of the grammar (recursion goes through these). */
  record Ref(String rule) implements Expr {}

  /**
   * Free text (any bytes) in which each complete occurrence of a trigger string hands over to the
   * matching body; after the body, free text resumes. The text may end anywhere outside a body.
   * This is the shape of vLLM's structural tags.
   */
  record TagDispatch(List<String> triggers, List<Expr> bodies) implements Expr {
    public TagDispatch {
      triggers = List.copyOf(triggers);
      bodies = List.copyOf(bodies);
      if (triggers.size() != bodies.size() || triggers.isEmpty())
        throw new IllegalArgumentException("one body per trigger, at least one trigger");
      for (String t : triggers)
        if (t.isEmpty()) throw new IllegalArgumentException("empty trigger");
    }
  }

  // ---- building helpers -------------------------------------------------------------------

  static Expr empty() {
    return new Empty();
  }

  static Expr literal(String s) {
    return s.isEmpty() ? new Empty() : new Bytes(s.getBytes(StandardCharsets.UTF_8));
  }

  static Expr chars(int... ranges) {
    return new CharSet(ranges);
  }

  static Expr ref(String rule) {
    return new Ref(rule);
  }

  static Expr seq(Expr... items) {
    return seq(List.of(items));
  }

  /** A concatenation, flattened, without empties; a single item stands for itself. */
  static Expr seq(List<Expr> items) {
    List<Expr> out = new ArrayList<>();
    for (Expr e : items) {
      if (e instanceof Empty) continue;
      if (e instanceof Seq s) out.addAll(s.items());
      else out.add(e);
    }
    if (out.isEmpty()) return new Empty();
    return out.size() == 1 ? out.get(0) : new Seq(out);
  }

  static Expr alt(Expr... options) {
    return alt(List.of(options));
  }

  /** An alternation, flattened; a single option stands for itself. */
  static Expr alt(List<Expr> options) {
    List<Expr> out = new ArrayList<>();
    for (Expr e : options) {
      if (e instanceof Alt a) out.addAll(a.options());
      else out.add(e);
    }
    return out.size() == 1 ? out.get(0) : new Alt(out);
  }

  static Expr optional(Expr e) {
    return new Repeat(e, 0, 1);
  }

  static Expr star(Expr e) {
    return new Repeat(e, 0, Repeat.UNBOUNDED);
  }

  static Expr plus(Expr e) {
    return new Repeat(e, 1, Repeat.UNBOUNDED);
  }

  static Expr repeat(Expr e, int min, int max) {
    if (min == 1 && max == 1) return e;
    if (max == 0) return new Empty();
    return new Repeat(e, min, max);
  }
}
