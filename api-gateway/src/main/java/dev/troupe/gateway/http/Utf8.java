package dev.troupe.gateway.http;

import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CoderResult;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

/**
 * Strict UTF-8 for request bodies. Jackson's byte parser decodes some invalid UTF-8 without
 * complaint (an overlong {@code C0 80} becomes U+0000, a UTF-8-encoded surrogate a lone surrogate),
 * so a body that is not UTF-8 was served as if it were other text. The JDK's decoder refuses every
 * such sequence (RFC 3629); the bodies are checked with it before they are parsed. Bodies in UTF-16
 * or UTF-32 (a byte-order mark, or a NUL among the first four bytes: JSON's own detection, RFC
 * 4627) are left to Jackson, as Python's {@code json.loads} accepts them too.
 */
public final class Utf8 {
  private Utf8() {}

  /** The offset of the first byte that is not valid UTF-8, or -1 (also for UTF-16/32 bodies). */
  public static long firstInvalidByte(byte[] body) {
    if (wideEncoding(body)) return -1;
    CharsetDecoder d =
        StandardCharsets.UTF_8
            .newDecoder()
            .onMalformedInput(CodingErrorAction.REPORT)
            .onUnmappableCharacter(CodingErrorAction.REPORT);
    ByteBuffer in = ByteBuffer.wrap(body);
    CharBuffer out = CharBuffer.allocate(8192);
    while (true) {
      CoderResult r = d.decode(in, out, true);
      if (r.isError()) return in.position();
      if (r.isUnderflow()) return d.flush(out).isError() ? in.position() : -1;
      out.clear(); // overflow: the decoded text is not needed
    }
  }

  /** A strict decoder, for bodies read as a stream. */
  public static CharsetDecoder strictDecoder() {
    return StandardCharsets.UTF_8
        .newDecoder()
        .onMalformedInput(CodingErrorAction.REPORT)
        .onUnmappableCharacter(CodingErrorAction.REPORT);
  }

  private static boolean wideEncoding(byte[] b) {
    if (b.length >= 2
        && ((b[0] == (byte) 0xFE && b[1] == (byte) 0xFF)
            || (b[0] == (byte) 0xFF && b[1] == (byte) 0xFE))) return true;
    for (int i = 0; i < Math.min(4, b.length); i++) if (b[i] == 0) return true;
    return false;
  }
}
