package dev.troupe.protocol;

/**
 * Text that can be persisted: a Java string may hold a lone UTF-16 surrogate (JSON's {@code
 * "\ud800"} escape parses to one), which no UTF-8 or CBOR encoder can write, so a journal event
 * holding one fails to persist and stops its entity. Records that become events check their text
 * here; the HTTP layer checks first and answers 422 naming the field.
 */
public final class StorableText {
  private StorableText() {}

  /** The index of the first lone surrogate in {@code s}, or -1. */
  public static int loneSurrogate(String s) {
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (Character.isHighSurrogate(c)) {
        if (i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) i++;
        else return i;
      } else if (Character.isLowSurrogate(c)) return i;
    }
    return -1;
  }

  /**
   * {@code value} when it can be persisted (null passes).
   *
   * @throws IllegalArgumentException naming {@code field} when it holds a lone surrogate
   */
  public static String requireStorable(String value, String field) {
    if (value != null && loneSurrogate(value) >= 0)
      throw new IllegalArgumentException(
          field + " holds a lone UTF-16 surrogate at index " + loneSurrogate(value));
    return value;
  }
}
