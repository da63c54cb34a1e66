package dev.troupe.gateway.preview;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.protocol.StorableText;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * Text that can be stored: a Java string may hold a lone UTF-16 surrogate (JSON's {@code "\ud800"}
 * escape parses to one), which no UTF-8 or CBOR encoder can write, so the journal, the database and
 * the JSON answer would all fail on it. Every preview endpoint that stores what it is sent checks
 * it here first and answers 422 at the field ({@link #UNSTORABLE}, pydantic's wording).
 */
public final class Text {
  /** pydantic's message for a string that is not valid Unicode. */
  public static final String UNSTORABLE =
      "Input should be a valid string, unable to parse raw data as a unicode string";

  /** pydantic's type for it. */
  public static final String UNSTORABLE_TYPE = "string_unicode";

  private Text() {}

  /** The index of the first lone surrogate in {@code s}, or -1. */
  public static int loneSurrogate(String s) {
    return StorableText.loneSurrogate(s);
  }

  /**
   * Calls {@code at} with the {@code loc} of every string and every key in {@code node} (itself at
   * {@code loc}) that holds a lone surrogate. Nesting is bounded by the JSON reader's limit.
   */
  public static void findUnstorable(JsonNode node, List<Object> loc, Consumer<List<Object>> at) {
    if (node.isTextual()) {
      if (loneSurrogate(node.textValue()) >= 0) at.accept(loc);
    } else if (node.isArray()) {
      for (int i = 0; i < node.size(); i++) findUnstorable(node.get(i), child(loc, i), at);
    } else if (node.isObject()) {
      for (Map.Entry<String, JsonNode> e : node.properties()) {
        // the loc is shown in the answer, which must itself be valid UTF-8
        List<Object> key = child(loc, withoutLoneSurrogates(e.getKey()));
        if (loneSurrogate(e.getKey()) >= 0) at.accept(key);
        findUnstorable(e.getValue(), key, at);
      }
    }
  }

  private static List<Object> child(List<Object> loc, Object part) {
    List<Object> l = new ArrayList<>(loc.size() + 1);
    l.addAll(loc);
    l.add(part);
    return l;
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
