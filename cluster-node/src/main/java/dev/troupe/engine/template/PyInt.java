package dev.troupe.engine.template;

import dev.troupe.engine.ChatTemplate.TemplateException;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.math.MathContext;

/**
 * Python's {@code int}: unbounded in Python, here a {@code Long} while it fits in 64 bits and a
 * {@link BigInteger} beyond, up to {@link #MAX_DIGITS} decimal digits (Python's own limit for
 * turning an int into text, {@code sys.int_info.default_max_str_digits}: a larger int could never
 * be printed anyway). Results are checked before they are computed, so {@code 2 ** 10**18} is an
 * error at once, while {@code 1 ** 9223372036854775807} is 1 at once, as in Python.
 */
final class PyInt {
  private PyInt() {}

  static final int MAX_DIGITS = 4300;

  /** Bits of the largest allowed magnitude: 10^4300 < 2^14285. */
  private static final int MAX_BITS = 14285;

  private static final BigInteger LONG_MIN = BigInteger.valueOf(Long.MIN_VALUE);
  private static final BigInteger LONG_MAX = BigInteger.valueOf(Long.MAX_VALUE);

  static boolean is(Object v) {
    return v instanceof Long || v instanceof Boolean || v instanceof BigInteger;
  }

  static BigInteger big(Object v) {
    if (v instanceof BigInteger b) return b;
    return BigInteger.valueOf(Values.asLong(v));
  }

  /** The canonical value: a Long when it fits, else a BigInteger within the size limit. */
  static Object of(BigInteger b) {
    if (b.bitLength() < 64) return b.longValue();
    if (b.bitLength() > MAX_BITS) throw tooLarge();
    return b;
  }

  private static TemplateException tooLarge() {
    return new TemplateException(
        "integer too large: templates compute with integers of up to "
            + MAX_DIGITS
            + " digits (Python's limit for printing one)");
  }

  /** An integer literal or {@code int()} of a string of digits. */
  static Object parse(String digits) {
    if (digits.length() > MAX_DIGITS)
      throw new TemplateException(
          "Exceeds the limit (" + MAX_DIGITS + " digits) for integer string conversion");
    return of(new BigInteger(digits));
  }

  /** Python {@code int(float)}: truncation, exact. */
  static Object ofDouble(double d) {
    if (Double.isNaN(d)) throw new TemplateException("cannot convert float NaN to integer");
    if (Double.isInfinite(d))
      throw new TemplateException("cannot convert float infinity to integer");
    if (Math.abs(d) < 0x1p62) return (long) d;
    return of(new BigDecimal(d).toBigInteger());
  }

  static double toDouble(Object v) {
    if (!(v instanceof BigInteger b)) return Values.asLong(v);
    double d = b.doubleValue();
    if (Double.isInfinite(d)) throw new TemplateException("int too large to convert to float");
    return d;
  }

  static Object add(Object a, Object b) {
    if (!(a instanceof BigInteger) && !(b instanceof BigInteger)) {
      long x = Values.asLong(a);
      long y = Values.asLong(b);
      long r = x + y;
      if (((x ^ r) & (y ^ r)) >= 0) return r;
    }
    return of(big(a).add(big(b)));
  }

  static Object subtract(Object a, Object b) {
    if (!(a instanceof BigInteger) && !(b instanceof BigInteger)) {
      long x = Values.asLong(a);
      long y = Values.asLong(b);
      long r = x - y;
      if (((x ^ y) & (x ^ r)) >= 0) return r;
    }
    return of(big(a).subtract(big(b)));
  }

  static Object multiply(Object a, Object b) {
    if (!(a instanceof BigInteger) && !(b instanceof BigInteger)) {
      long x = Values.asLong(a);
      long y = Values.asLong(b);
      long hi = Math.multiplyHigh(x, y);
      long lo = x * y;
      if ((hi == 0 && lo >= 0) || (hi == -1 && lo < 0)) return lo;
    }
    BigInteger x = big(a);
    BigInteger y = big(b);
    if (x.bitLength() + y.bitLength() > MAX_BITS + 1) throw tooLarge();
    return of(x.multiply(y));
  }

  static Object negate(Object v) {
    if (v instanceof BigInteger b) return of(b.negate());
    long x = Values.asLong(v);
    return x == Long.MIN_VALUE ? of(BigInteger.valueOf(x).negate()) : (Object) (-x);
  }

  static Object abs(Object v) {
    return signum(v) < 0 ? negate(v) : positive(v);
  }

  static Object positive(Object v) {
    return v instanceof BigInteger ? v : (Object) Values.asLong(v);
  }

  static int signum(Object v) {
    return v instanceof BigInteger b ? b.signum() : Long.signum(Values.asLong(v));
  }

  /** Python {@code //}: rounds toward negative infinity. */
  static Object floorDivide(Object a, Object b) {
    if (signum(b) == 0) throw new TemplateException("integer division or modulo by zero");
    if (!(a instanceof BigInteger) && !(b instanceof BigInteger)) {
      long x = Values.asLong(a);
      long y = Values.asLong(b);
      if (!(x == Long.MIN_VALUE && y == -1)) return Math.floorDiv(x, y);
    }
    BigInteger[] qr = big(a).divideAndRemainder(big(b));
    BigInteger q = qr[0];
    if (qr[1].signum() != 0 && qr[1].signum() != big(b).signum()) q = q.subtract(BigInteger.ONE);
    return of(q);
  }

  /** Python {@code %}: the result has the divisor's sign. */
  static Object modulo(Object a, Object b) {
    if (signum(b) == 0) throw new TemplateException("integer division or modulo by zero");
    if (!(a instanceof BigInteger) && !(b instanceof BigInteger))
      return Math.floorMod(Values.asLong(a), Values.asLong(b));
    BigInteger y = big(b);
    BigInteger r = big(a).remainder(y);
    if (r.signum() != 0 && r.signum() != y.signum()) r = r.add(y);
    return of(r);
  }

  /** Python {@code /} on two ints: the correctly rounded float quotient. */
  static double trueDivide(Object a, Object b) {
    if (signum(b) == 0) throw new TemplateException("division by zero");
    if (!(a instanceof BigInteger) && !(b instanceof BigInteger)) {
      long x = Values.asLong(a);
      long y = Values.asLong(b);
      if (Math.abs(x) < 1L << 53 && Math.abs(y) < 1L << 53) return (double) x / y;
    }
    double d =
        new BigDecimal(big(a)).divide(new BigDecimal(big(b)), MathContext.DECIMAL128).doubleValue();
    if (Double.isInfinite(d))
      throw new TemplateException("integer division result too large for a float");
    return d;
  }

  /** Python {@code int ** int}; a negative exponent gives a float. */
  static Object power(Object base, Object exponent) {
    if (signum(exponent) < 0) {
      if (signum(base) == 0)
        throw new TemplateException("0.0 cannot be raised to a negative power");
      return Math.pow(toDouble(base), toDouble(exponent));
    }
    BigInteger b = big(base);
    BigInteger e = big(exponent);
    if (b.signum() == 0) return e.signum() == 0 ? 1L : 0L;
    if (b.equals(BigInteger.ONE)) return 1L;
    if (b.equals(BigInteger.ONE.negate())) return e.testBit(0) ? -1L : 1L;
    // |b| >= 2: the result has at least (bitLength(b) - 1) * e + 1 bits.
    if (e.bitLength() > 31 || (long) (b.bitLength() - 1) * e.intValue() >= MAX_BITS)
      throw tooLarge();
    return of(b.pow(e.intValue()));
  }

  static int compare(Object a, Object b) {
    if (!(a instanceof BigInteger) && !(b instanceof BigInteger))
      return Long.compare(Values.asLong(a), Values.asLong(b));
    return big(a).compareTo(big(b));
  }

  /** Exact comparison of an int with a finite float, as Python compares them. */
  static int compareWithDouble(Object i, double d) {
    if (Double.isNaN(d)) throw new IllegalArgumentException("NaN");
    if (Double.isInfinite(d)) return d > 0 ? -1 : 1;
    return new BigDecimal(big(i)).compareTo(new BigDecimal(d));
  }

  /** The value as a long for indexing, or the nearest long when it does not fit (slices clamp). */
  static long clampToLong(Object v) {
    if (!(v instanceof BigInteger b)) return Values.asLong(v);
    return b.compareTo(LONG_MAX) > 0
        ? Long.MAX_VALUE
        : b.compareTo(LONG_MIN) < 0 ? Long.MIN_VALUE : b.longValue();
  }
}
