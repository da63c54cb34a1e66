package dev.troupe.gateway.preview;

/**
 * Text that can be stored: a Java string may hold a lone UTF-16 surrogate (JSON's {@code "\ud800"}
 * escape parses to one), which no UTF-8 or CBOR encoder can write, so the journal, the database and
 * the JSON answer would all fail on it.
 */
final class Text {
  private Text() {}

  /** The index of the first lone surrogate in {@code s}, or -1. */
  static int loneSurrogate(String s) {
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (Character.isHighSurrogate(c)) {
        if (i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) i++;
        else return i;
      } else if (Character.isLowSurrogate(c)) return i;
    }
    return -1;
  }

  /** {@code s} with each lone surrogate replaced by U+FFFD. */
  static String withoutLoneSurrogates(String s) {
    if (loneSurrogate(s) < 0) return s;
    StringBuilder sb = new StringBuilder(s.length());
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (Character.isHighSurrogate(c)
          && i + 1 < s.length()
          && Character.isLowSurrogate(s.charAt(i + 1))) {
        sb.append(c).append(s.charAt(++i));
      } else if (Character.isSurrogate(c)) sb.append('\uFFFD');
      else sb.append(c);
    }
    return sb.toString();
  }
}
