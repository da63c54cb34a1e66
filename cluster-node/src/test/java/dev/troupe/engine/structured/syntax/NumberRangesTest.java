package dev.troupe.engine.structured.syntax;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.troupe.engine.structured.grammar.Automaton;
import dev.troupe.engine.structured.grammar.AutomatonCompiler;
import dev.troupe.engine.structured.grammar.Grammar;
import dev.troupe.engine.structured.grammar.Limits;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.Random;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * Bounded integers and decimals: membership in the automaton equals "is a JSON number spelling
 * (without exponent) whose value is within the bounds", for random bounds and random strings.
 */
class NumberRangesTest {

  private static final Pattern JSON_INT = Pattern.compile("-?(0|[1-9][0-9]*)");
  private static final Pattern JSON_DEC = Pattern.compile("-?(0|[1-9][0-9]*)(\\.[0-9]+)?");

  @Test
  void integersMatchExactlyTheBoundedRange() {
    Random r = new Random(1);
    for (int trial = 0; trial < 300; trial++) {
      BigInteger lo = r.nextInt(5) == 0 ? null : BigInteger.valueOf(r.nextInt(4000) - 2000);
      BigInteger hi = r.nextInt(5) == 0 ? null : BigInteger.valueOf(r.nextInt(4000) - 2000);
      if (lo != null && hi != null && lo.compareTo(hi) > 0) {
        BigInteger t = lo;
        lo = hi;
        hi = t;
      }
      Automaton a = automaton(NumberRanges.integers(lo, hi));
      for (int k = 0; k < 200; k++) {
        String s = randomNumberString(r, false);
        boolean want =
            JSON_INT.matcher(s).matches() && !s.equals("-0") && inRange(new BigDecimal(s), lo, hi);
        assertEquals(want, a.matches(bytes(s)), s + " in [" + lo + ", " + hi + "]");
      }
      if (lo != null) assertEquals(true, a.matches(bytes(lo.toString())));
      if (hi != null) assertEquals(true, a.matches(bytes(hi.toString())));
    }
  }

  @Test
  void decimalsMatchExactlyTheBoundedRange() {
    Random r = new Random(2);
    int positives = 0;
    int total = 0;
    for (int trial = 0; trial < 400; trial++) {
      BigDecimal lo = r.nextInt(5) == 0 ? null : randomBound(r);
      BigDecimal hi = r.nextInt(5) == 0 ? null : randomBound(r);
      if (lo != null && hi != null && lo.compareTo(hi) > 0) {
        BigDecimal t = lo;
        lo = hi;
        hi = t;
      }
      boolean loInc = r.nextBoolean();
      boolean hiInc = r.nextBoolean();
      if (lo != null && hi != null && lo.compareTo(hi) == 0) loInc = hiInc = true;
      Automaton a = automaton(NumberRanges.decimals(lo, loInc, hi, hiInc));
      for (int k = 0; k < 300; k++) {
        String s = randomNumberString(r, true);
        boolean want =
            JSON_DEC.matcher(s).matches()
                && !isNegativeZero(s)
                && inRange(new BigDecimal(s), lo, loInc, hi, hiInc);
        assertEquals(
            want,
            a.matches(bytes(s)),
            s + " in " + (loInc ? "[" : "(") + lo + ", " + hi + (hiInc ? "]" : ")"));
        total++;
        if (want) positives++;
      }
    }
    assertEquals(true, positives > total / 10, positives + " of " + total + " strings in range");
  }

  private static boolean isNegativeZero(String s) {
    return s.startsWith("-") && new BigDecimal(s).signum() == 0;
  }

  private static BigDecimal randomBound(Random r) {
    int scale = r.nextInt(4);
    return BigDecimal.valueOf(r.nextInt(4000) - 2000, scale);
  }

  /** Strings near the interesting region: digits, a sign, sometimes a fraction or junk. */
  private static String randomNumberString(Random r, boolean fractions) {
    StringBuilder sb = new StringBuilder();
    if (r.nextInt(3) == 0) sb.append('-');
    int len = 1 + r.nextInt(5);
    for (int i = 0; i < len; i++) sb.append((char) ('0' + r.nextInt(10)));
    if (r.nextInt(4) == 0 && sb.length() > 1 && sb.charAt(sb.length() - len) != '0') {
      // keep as is
    }
    if (fractions && r.nextInt(2) == 0) {
      sb.append('.');
      int f = r.nextInt(5);
      for (int i = 0; i < f; i++) sb.append((char) ('0' + (r.nextInt(3) == 0 ? 0 : r.nextInt(10))));
    }
    if (r.nextInt(40) == 0) sb.append('x');
    return sb.toString();
  }

  private static boolean inRange(BigDecimal v, BigInteger lo, BigInteger hi) {
    return (lo == null || v.compareTo(new BigDecimal(lo)) >= 0)
        && (hi == null || v.compareTo(new BigDecimal(hi)) <= 0);
  }

  private static boolean inRange(
      BigDecimal v, BigDecimal lo, boolean loInc, BigDecimal hi, boolean hiInc) {
    if (lo != null) {
      int c = v.compareTo(lo);
      if (c < 0 || (c == 0 && !loInc)) return false;
    }
    if (hi != null) {
      int c = v.compareTo(hi);
      if (c > 0 || (c == 0 && !hiInc)) return false;
    }
    return true;
  }

  private static Automaton automaton(dev.troupe.engine.structured.grammar.Expr e) {
    return AutomatonCompiler.compile(Grammar.of(e), Limits.defaults());
  }

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }
}
