package dev.troupe.engine.tokenizer;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Set;

/**
 * The bytes each vocabulary entry stands for, from the {@code decoder} of a {@code tokenizer.json}
 * (what a grammar engine needs; xgrammar calls these vocabulary types): byte-level BPE entries are
 * spelled in GPT-2's printable byte alphabet; SentencePiece-style entries use {@code ▁} for a space
 * and, with byte fallback, {@code <0xNN>} for raw bytes; added tokens are their literal content.
 *
 * <p>Not modelled: the space a Metaspace decoder strips from the very first token of a text.
 */
final class TokenBytes {

  enum Kind {
    BYTE_LEVEL,
    METASPACE,
    RAW
  }

  private static final int[] UNICODE_TO_BYTE = unicodeToByte();

  private final Kind kind;
  private final boolean byteFallback;
  private final Set<Integer> added;
  private final String[] idToToken;

  TokenBytes(Kind kind, boolean byteFallback, Set<Integer> added, String[] idToToken) {
    this.kind = kind != null ? kind : guess(idToToken);
    this.byteFallback = byteFallback;
    this.added = Set.copyOf(added);
    this.idToToken = idToToken;
  }

  /** Classifies the {@code decoder} value the parser is positioned on (and consumes it). */
  static Kind kindOf(JsonParser p) throws IOException {
    JsonNode decoder = new ObjectMapper().readTree(p);
    return kindOf(decoder);
  }

  private static Kind kindOf(JsonNode d) {
    if (d == null || d.isNull()) return null;
    String type = d.path("type").asText("");
    switch (type) {
      case "ByteLevel":
        return Kind.BYTE_LEVEL;
      case "Metaspace":
        return Kind.METASPACE;
      case "Replace":
        return "▁".equals(d.path("pattern").path("String").asText(null)) ? Kind.METASPACE : null;
      case "Sequence":
        Kind found = null;
        for (JsonNode child : d.path("decoders")) {
          Kind k = kindOf(child);
          if (k == Kind.BYTE_LEVEL) return k;
          if (k != null) found = k;
        }
        return found;
      default:
        return null;
    }
  }

  private static Kind guess(String[] idToToken) {
    for (String t : idToToken) {
      if (t == null) continue;
      if (t.indexOf('Ġ') >= 0) return Kind.BYTE_LEVEL;
      if (t.indexOf('▁') >= 0) return Kind.METASPACE;
    }
    return Kind.RAW;
  }

  byte[] of(int id) {
    String token = idToToken[id];
    if (token == null) return null;
    if (added.contains(id)) return token.getBytes(StandardCharsets.UTF_8);
    switch (kind) {
      case BYTE_LEVEL:
        {
          byte[] out = new byte[token.length()];
          int n = 0;
          for (int i = 0; i < token.length(); i++) {
            char c = token.charAt(i);
            int b = c < UNICODE_TO_BYTE.length ? UNICODE_TO_BYTE[c] : -1;
            if (b < 0) return token.getBytes(StandardCharsets.UTF_8); // not a byte-level entry
            out[n++] = (byte) b;
          }
          return java.util.Arrays.copyOf(out, n);
        }
      case METASPACE:
        if (byteFallback && token.length() == 6 && token.startsWith("<0x") && token.endsWith(">")) {
          try {
            return new byte[] {(byte) Integer.parseInt(token.substring(3, 5), 16)};
          } catch (NumberFormatException e) {
            // an ordinary token that happens to look like one
          }
        }
        return token.replace('▁', ' ').getBytes(StandardCharsets.UTF_8);
      default:
        return token.getBytes(StandardCharsets.UTF_8);
    }
  }

  /** The inverse of GPT-2's {@code bytes_to_unicode}. */
  private static int[] unicodeToByte() {
    int[] inv = new int[512];
    java.util.Arrays.fill(inv, -1);
    int extra = 0;
    for (int b = 0; b < 256; b++) {
      boolean printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174);
      int c = printable ? b : 256 + extra++;
      inv[c] = b;
    }
    return inv;
  }
}
