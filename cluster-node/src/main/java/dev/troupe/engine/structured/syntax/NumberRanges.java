package dev.troupe.engine.structured.syntax;

import dev.troupe.engine.structured.grammar.Expr;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.List;

/**
 * JSON numbers within bounds, as grammar expressions (what {@code minimum}/{@code maximum} and
 * their exclusive forms need). Integers are exact for any bounds. Decimals with a bound are written
 * without an exponent ({@code -?int(.frac)?}); the fractional boundary cases are compared digit by
 * digit, so every generated number is inside the bounds.
 */
final class NumberRanges {

  private NumberRanges() {}

  private static final Expr DIGIT = Expr.chars('0', '9');
  private static final Expr NONZERO = Expr.chars('1', '9');

  /** Integers n (canonical JSON: no leading zeros, no "-0") with lo ≤ n ≤ hi; null = unbounded. */
  static Expr integers(BigInteger lo, BigInteger hi) {
    if (lo != null && hi != null && lo.compareTo(hi) > 0)
      throw new IllegalArgumentException("no integer within the bounds");
    List<Expr> options = new ArrayList<>();
    // non-negative part [max(lo,0), hi]
    if (hi == null || hi.signum() >= 0) {
      BigInteger from = lo == null || lo.signum() < 0 ? BigInteger.ZERO : lo;
      options.add(naturals(from, hi));
    }
    // negative part [lo, min(hi,-1)] as "-" followed by magnitudes [max(1,-hi), -lo]
    if (lo == null || lo.signum() < 0) {
      BigInteger magLo = hi == null || hi.signum() >= 0 ? BigInteger.ONE : hi.negate();
      BigInteger magHi = lo == null ? null : lo.negate();
      options.add(Expr.seq(Expr.literal("-"), naturals(magLo, magHi)));
    }
    return Expr.alt(options);
  }

  /** Decimal strings x with the bounds (inclusive or not); null = unbounded. */
  static Expr decimals(BigDecimal lo, boolean loInclusive, BigDecimal hi, boolean hiInclusive) {
    if (lo != null && hi != null) {
      int c = lo.compareTo(hi);
      if (c > 0 || (c == 0 && !(loInclusive && hiInclusive)))
        throw new IllegalArgumentException("no number within the bounds");
    }
    List<Expr> options = new ArrayList<>();
    // x >= 0 part (including -0 is avoided: only non-negative spellings)
    if (hi == null || hi.signum() > 0 || (hi.signum() == 0 && hiInclusive)) {
      boolean zeroOk = lo == null || lo.signum() < 0 || (lo.signum() == 0 && loInclusive);
      BigDecimal plo = lo == null || lo.signum() < 0 ? BigDecimal.ZERO : lo;
      boolean ploInc = lo == null || lo.signum() < 0 || loInclusive;
      options.add(nonNegative(plo, ploInc || zeroOk, hi, hiInclusive));
    }
    // x < 0 part: "-" then magnitudes in (max(0,-hi) .. -lo]
    if (lo == null || lo.signum() < 0) {
      BigDecimal mlo = hi == null || hi.signum() >= 0 ? BigDecimal.ZERO : hi.negate();
      boolean mloInc = hi != null && hi.signum() < 0 && hiInclusive;
      BigDecimal mhi = lo == null ? null : lo.negate();
      // magnitude 0 is excluded (it would be "-0")
      options.add(
          Expr.seq(
              Expr.literal("-"), nonNegative(mlo, mloInc && mlo.signum() > 0, mhi, loInclusive)));
    }
    return Expr.alt(options);
  }

  /** Naturals written canonically in [lo, hi] (hi null = unbounded); lo ≥ 0. */
  private static Expr naturals(BigInteger lo, BigInteger hi) {
    String a = lo.toString();
    if (hi == null) {
      // lo..(10^len(a) - 1), then every longer number
      List<Expr> options = new ArrayList<>();
      options.add(sameLength(a, "9".repeat(a.length())));
      options.add(Expr.seq(NONZERO, Expr.repeat(DIGIT, a.length(), Expr.Repeat.UNBOUNDED)));
      return Expr.alt(options);
    }
    String b = hi.toString();
    List<Expr> options = new ArrayList<>();
    for (int len = a.length(); len <= b.length(); len++) {
      String from = len == a.length() ? a : "1" + "0".repeat(len - 1);
      String to = len == b.length() ? b : "9".repeat(len);
      if (len == 1 && from.equals("1") && a.equals("0")) from = "0";
      options.add(sameLength(from, to));
    }
    return Expr.alt(options);
  }

  /** Digit strings of one length between from and to (both that length), lexicographically. */
  private static Expr sameLength(String from, String to) {
    if (from.compareTo(to) > 0) return new Expr.Alt(List.of());
    if (from.isEmpty()) return Expr.empty();
    char f = from.charAt(0);
    char t = to.charAt(0);
    String fr = from.substring(1);
    String tr = to.substring(1);
    if (f == t) return Expr.seq(Expr.literal(String.valueOf(f)), sameLength(fr, tr));
    List<Expr> options = new ArrayList<>();
    options.add(Expr.seq(Expr.literal(String.valueOf(f)), sameLength(fr, "9".repeat(fr.length()))));
    if (t - f > 1)
      options.add(Expr.seq(Expr.chars(f + 1, t - 1), Expr.repeat(DIGIT, fr.length(), fr.length())));
    options.add(Expr.seq(Expr.literal(String.valueOf(t)), sameLength("0".repeat(tr.length()), tr)));
    return Expr.alt(options);
  }

  /**
   * Non-negative decimal spellings {@code int(.frac)?} with value in the range ({@code hi} null =
   * unbounded). lo ≥ 0.
   */
  private static Expr nonNegative(BigDecimal lo, boolean loInc, BigDecimal hi, boolean hiInc) {
    BigInteger loInt = lo.setScale(0, java.math.RoundingMode.FLOOR).toBigIntegerExact();
    BigDecimal loFrac = lo.subtract(new BigDecimal(loInt));
    List<Expr> options = new ArrayList<>();
    if (hi == null) {
      // integer part == loInt with fraction >= loFrac (> if exclusive), or integer part > loInt
      options.add(Expr.seq(naturals(loInt, loInt), fractionAtLeast(loFrac, loInc)));
      options.add(Expr.seq(naturals(loInt.add(BigInteger.ONE), null), anyFraction()));
      return Expr.alt(options);
    }
    BigInteger hiInt = hi.setScale(0, java.math.RoundingMode.FLOOR).toBigIntegerExact();
    BigDecimal hiFrac = hi.subtract(new BigDecimal(hiInt));
    if (loInt.equals(hiInt)) {
      options.add(Expr.seq(naturals(loInt, loInt), fractionBetween(loFrac, loInc, hiFrac, hiInc)));
      return Expr.alt(options);
    }
    options.add(Expr.seq(naturals(loInt, loInt), fractionAtLeast(loFrac, loInc)));
    if (hiInt.subtract(loInt).compareTo(BigInteger.ONE) > 0)
      options.add(
          Expr.seq(
              naturals(loInt.add(BigInteger.ONE), hiInt.subtract(BigInteger.ONE)), anyFraction()));
    options.add(Expr.seq(naturals(hiInt, hiInt), fractionAtMost(hiFrac, hiInc)));
    return Expr.alt(options);
  }

  private static Expr anyFraction() {
    return Expr.optional(Expr.seq(Expr.literal("."), Expr.plus(DIGIT)));
  }

  /** Fraction f (absent = 0) with 0.f ≥ bound (> when not inclusive); bound in [0,1). */
  private static Expr fractionAtLeast(BigDecimal bound, boolean inclusive) {
    String d = digits(bound);
    List<Expr> options = new ArrayList<>();
    if (d.isEmpty()) {
      // bound 0: inclusive → anything; exclusive → some nonzero digit
      if (inclusive) return anyFraction();
      return Expr.seq(Expr.literal("."), Expr.star(DIGIT), NONZERO, Expr.star(DIGIT));
    }
    options.add(Expr.seq(Expr.literal("."), atLeast(d, inclusive)));
    return Expr.alt(options);
  }

  /** Digit strings s (non-empty) with 0.s ≥ 0.d (> if not inclusive). */
  private static Expr atLeast(String d, boolean inclusive) {
    if (d.isEmpty()) {
      // s's remaining digits vs 0: ≥ always, > needs a nonzero digit somewhere
      return inclusive ? Expr.star(DIGIT) : Expr.seq(Expr.star(DIGIT), NONZERO, Expr.star(DIGIT));
    }
    char c = d.charAt(0);
    List<Expr> options = new ArrayList<>();
    if (c < '9') options.add(Expr.seq(Expr.chars(c + 1, '9'), Expr.star(DIGIT)));
    // same digit, then the rest must compare
    String rest = d.substring(1);
    Expr tail = atLeast(rest, inclusive);
    // when s ends right after this digit, the remainder of s is "", i.e. 0 vs rest
    options.add(Expr.seq(Expr.literal(String.valueOf(c)), tail));
    return Expr.alt(options);
  }

  /** Fraction f (absent = 0) with 0.f ≤ bound (< when not inclusive); bound in [0,1). */
  private static Expr fractionAtMost(BigDecimal bound, boolean inclusive) {
    String d = digits(bound);
    if (d.isEmpty()) {
      // ≤ 0: only zeros; < 0: nothing — but the integer part itself equals the bound then
      if (!inclusive) return new Expr.Alt(List.of());
      return Expr.optional(Expr.seq(Expr.literal("."), Expr.plus(Expr.literal("0"))));
    }
    return Expr.alt(Expr.empty(), Expr.seq(Expr.literal("."), atMost(d, inclusive, true)));
  }

  /**
   * Digit strings s with 0.s ≤ 0.d (&lt; if not inclusive), d non-empty; s is non-empty when {@code
   * first} (right after the decimal point).
   */
  private static Expr atMost(String d, boolean inclusive, boolean first) {
    if (d.isEmpty()) return inclusive ? Expr.star(Expr.literal("0")) : new Expr.Alt(List.of());
    char c = d.charAt(0);
    List<Expr> options = new ArrayList<>();
    if (c > '0') options.add(Expr.seq(Expr.chars('0', c - 1), Expr.star(DIGIT)));
    options.add(
        Expr.seq(Expr.literal(String.valueOf(c)), atMost(d.substring(1), inclusive, false)));
    // s may stop before d does: then 0.s < 0.d, since d has no trailing zeros
    if (!first) options.add(Expr.empty());
    return Expr.alt(options);
  }

  /** Fraction between two bounds with the same integer part. */
  private static Expr fractionBetween(BigDecimal lo, boolean loInc, BigDecimal hi, boolean hiInc) {
    // the intersection is expressed as: at least lo AND at most hi; done by enumerating the
    // common prefix of the two digit strings
    String a = digits(lo);
    String b = digits(hi);
    return between(a, loInc, b, hiInc, true);
  }

  /**
   * Fraction spellings (including the absent fraction when {@code top}) with 0.a ≤ 0.s ≤ 0.b
   * (strictness per flag).
   */
  private static Expr between(String a, boolean aInc, String b, boolean bInc, boolean top) {
    if (a.isEmpty()) {
      // lower bound is 0 at this level
      Expr le = top ? fractionAtMostDigits(b, bInc) : atMostOrEmpty(b, bInc);
      if (aInc) return le;
      // strictly above zero: need a nonzero digit
      return intersectPositive(b, bInc, top);
    }
    char ca = a.charAt(0);
    char cb = b.isEmpty() ? '0' : b.charAt(0);
    String ra = a.substring(1);
    String rb = b.isEmpty() ? "" : b.substring(1);
    Expr prefix = top ? Expr.literal(".") : Expr.empty();
    List<Expr> options = new ArrayList<>();
    if (ca > cb) return new Expr.Alt(List.of()); // cannot happen for lo <= hi
    if (ca == cb) {
      options.add(
          Expr.seq(prefix, Expr.literal(String.valueOf(ca)), between(ra, aInc, rb, bInc, false)));
      return Expr.alt(options);
    }
    // ca < cb
    options.add(Expr.seq(prefix, Expr.literal(String.valueOf(ca)), atLeast(ra, aInc)));
    if (cb - ca > 1) options.add(Expr.seq(prefix, Expr.chars(ca + 1, cb - 1), Expr.star(DIGIT)));
    options.add(Expr.seq(prefix, Expr.literal(String.valueOf(cb)), atMostOrEmpty(rb, bInc)));
    return Expr.alt(options);
  }

  private static Expr fractionAtMostDigits(String b, boolean inclusive) {
    if (b.isEmpty())
      return inclusive
          ? Expr.optional(Expr.seq(Expr.literal("."), Expr.plus(Expr.literal("0"))))
          : new Expr.Alt(List.of());
    return Expr.alt(Expr.empty(), Expr.seq(Expr.literal("."), atMost(b, inclusive, true)));
  }

  private static Expr atMostOrEmpty(String b, boolean inclusive) {
    if (b.isEmpty()) return inclusive ? Expr.star(Expr.literal("0")) : new Expr.Alt(List.of());
    return atMost(b, inclusive, false);
  }

  /** 0 &lt; 0.s ≤ 0.b (strictness per flag), s possibly preceded by '.' at the top level. */
  private static Expr intersectPositive(String b, boolean bInc, boolean top) {
    Expr prefix = top ? Expr.literal(".") : Expr.empty();
    if (b.isEmpty()) return new Expr.Alt(List.of());
    char cb = b.charAt(0);
    String rb = b.substring(1);
    List<Expr> options = new ArrayList<>();
    if (cb > '1') options.add(Expr.seq(prefix, Expr.chars('1', cb - 1), Expr.star(DIGIT)));
    if (cb > '0')
      options.add(Expr.seq(prefix, Expr.literal(String.valueOf(cb)), atMostOrEmpty(rb, bInc)));
    // leading zero digit: 0 then recurse strictly positive below rb (if cb is 0) or anything
    // positive
    if (cb == '0')
      options.add(Expr.seq(prefix, Expr.literal("0"), intersectPositive(rb, bInc, false)));
    else
      options.add(Expr.seq(prefix, Expr.literal("0"), Expr.star(DIGIT), NONZERO, Expr.star(DIGIT)));
    return Expr.alt(options);
  }

  /** The fractional digits of a value in [0,1) without trailing zeros ("" for 0). */
  private static String digits(BigDecimal fraction) {
    if (fraction.signum() == 0) return "";
    String s = fraction.stripTrailingZeros().toPlainString();
    int dot = s.indexOf('.');
    return dot < 0 ? "" : s.substring(dot + 1);
  }
}
