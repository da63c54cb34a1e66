package dev.troupe.engine.template;

import dev.troupe.engine.ChatTemplate.TemplateException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Python {@code str} methods templates call ({@code content.startswith(...)}, {@code split}...).
 */
final class StringMethods {
  private static final Set<String> NAMES =
      Set.of(
          "startswith",
          "endswith",
          "split",
          "rsplit",
          "strip",
          "lstrip",
          "rstrip",
          "replace",
          "upper",
          "lower",
          "title",
          "capitalize",
          "find",
          "rfind",
          "count",
          "splitlines",
          "isdigit",
          "isalpha",
          "isalnum",
          "isspace",
          "isupper",
          "islower",
          "join",
          "format",
          "removeprefix",
          "removesuffix",
          "index");

  private StringMethods() {}

  static boolean has(String name) {
    return NAMES.contains(name);
  }

  static Object call(String s, String name, List<Object> args, Map<String, Object> kwargs) {
    return switch (name) {
      case "startswith" -> anyAffix(s, arg(args, 0), true);
      case "endswith" -> anyAffix(s, arg(args, 0), false);
      case "split" -> split(s, optString(args, 0, kwargs.get("sep")), maxSplit(args, kwargs));
      case "rsplit" -> rsplit(s, optString(args, 0, kwargs.get("sep")), maxSplit(args, kwargs));
      case "strip" -> strip(s, optString(args, 0, null), true, true);
      case "lstrip" -> strip(s, optString(args, 0, null), true, false);
      case "rstrip" -> strip(s, optString(args, 0, null), false, true);
      case "replace" ->
          replace(
              s,
              str(arg(args, 0)),
              str(arg(args, 1)),
              args.size() > 2 ? Values.asLong(args.get(2)) : -1);
      case "upper" -> s.toUpperCase(java.util.Locale.ROOT);
      case "lower" -> s.toLowerCase(java.util.Locale.ROOT);
      case "title" -> title(s);
      case "capitalize" ->
          s.isEmpty()
              ? s
              : s.substring(0, s.offsetByCodePoints(0, 1)).toUpperCase(java.util.Locale.ROOT)
                  + s.substring(s.offsetByCodePoints(0, 1)).toLowerCase(java.util.Locale.ROOT);
      case "find" -> cpIndex(s, s.indexOf(str(arg(args, 0))));
      case "rfind" -> cpIndex(s, s.lastIndexOf(str(arg(args, 0))));
      case "index" -> {
        int i = s.indexOf(str(arg(args, 0)));
        if (i < 0) throw new TemplateException("substring not found");
        yield cpIndex(s, i);
      }
      case "count" -> count(s, str(arg(args, 0)));
      case "splitlines" -> {
        List<Object> out = new ArrayList<>(List.of((Object[]) s.split("\r\n|\r|\n", -1)));
        if (!out.isEmpty() && "".equals(out.get(out.size() - 1))) out.remove(out.size() - 1);
        yield out;
      }
      case "isdigit" -> !s.isEmpty() && s.codePoints().allMatch(Character::isDigit);
      case "isalpha" -> !s.isEmpty() && s.codePoints().allMatch(Character::isLetter);
      case "isalnum" -> !s.isEmpty() && s.codePoints().allMatch(Character::isLetterOrDigit);
      case "isspace" -> !s.isEmpty() && s.codePoints().allMatch(Values::isPySpace);
      case "isupper" ->
          s.chars().anyMatch(Character::isLetter) && s.equals(s.toUpperCase(java.util.Locale.ROOT));
      case "islower" ->
          s.chars().anyMatch(Character::isLetter) && s.equals(s.toLowerCase(java.util.Locale.ROOT));
      case "removeprefix" ->
          s.startsWith(str(arg(args, 0))) ? s.substring(str(arg(args, 0)).length()) : s;
      case "removesuffix" -> {
        String suffix = str(arg(args, 0));
        yield !suffix.isEmpty() && s.endsWith(suffix)
            ? s.substring(0, s.length() - suffix.length())
            : s;
      }
      case "join" -> {
        StringBuilder sb = new StringBuilder();
        List<Object> items = Values.iterate(arg(args, 0));
        for (int i = 0; i < items.size(); i++) {
          if (i > 0) sb.append(s);
          if (!(items.get(i) instanceof String item))
            throw new TemplateException("sequence item " + i + ": expected str instance");
          sb.append(item);
        }
        yield sb.toString();
      }
      case "format" -> format(s, args, kwargs);
      default -> throw new TemplateException("str has no method " + name);
    };
  }

  private static Object arg(List<Object> args, int i) {
    if (i >= args.size()) throw new TemplateException("missing argument");
    return args.get(i);
  }

  private static String str(Object v) {
    if (!(v instanceof String s))
      throw new TemplateException("expected a string but got " + Values.typeName(v));
    return s;
  }

  private static String optString(List<Object> args, int i, Object fallback) {
    Object v = i < args.size() ? args.get(i) : fallback;
    return v == null ? null : str(v);
  }

  private static long maxSplit(List<Object> args, Map<String, Object> kwargs) {
    Object v = args.size() > 1 ? args.get(1) : kwargs.get("maxsplit");
    return v == null ? -1 : Values.asLong(v);
  }

  private static boolean anyAffix(String s, Object affix, boolean prefix) {
    if (affix instanceof Values.Tuple t) {
      for (Object o : t.items())
        if (prefix ? s.startsWith(str(o)) : s.endsWith(str(o))) return true;
      return false;
    }
    return prefix ? s.startsWith(str(affix)) : s.endsWith(str(affix));
  }

  static List<Object> split(String s, String sep, long maxSplit) {
    List<Object> out = new ArrayList<>();
    if (sep == null) {
      int i = 0;
      int n = s.length();
      while (true) {
        while (i < n && Values.isPySpace(s.codePointAt(i)))
          i += Character.charCount(s.codePointAt(i));
        if (i >= n) break;
        if (maxSplit >= 0 && out.size() == maxSplit) {
          int end = n;
          while (end > i && Values.isPySpace(s.codePointBefore(end)))
            end -= Character.charCount(s.codePointBefore(end));
          out.add(s.substring(i, end));
          break;
        }
        int j = i;
        while (j < n && !Values.isPySpace(s.codePointAt(j)))
          j += Character.charCount(s.codePointAt(j));
        out.add(s.substring(i, j));
        i = j;
      }
      return out;
    }
    if (sep.isEmpty()) throw new TemplateException("empty separator");
    int start = 0;
    while (maxSplit < 0 || out.size() < maxSplit) {
      int idx = s.indexOf(sep, start);
      if (idx < 0) break;
      out.add(s.substring(start, idx));
      start = idx + sep.length();
    }
    out.add(s.substring(start));
    return out;
  }

  private static List<Object> rsplit(String s, String sep, long maxSplit) {
    if (sep == null || maxSplit < 0) return split(s, sep, maxSplit);
    if (sep.isEmpty()) throw new TemplateException("empty separator");
    List<Object> out = new ArrayList<>();
    int end = s.length();
    while (out.size() < maxSplit) {
      int idx = s.lastIndexOf(sep, end - sep.length());
      if (idx < 0) break;
      out.add(0, s.substring(idx + sep.length(), end));
      end = idx;
    }
    out.add(0, s.substring(0, end));
    return out;
  }

  static String strip(String s, String chars, boolean left, boolean right) {
    int start = 0;
    int end = s.length();
    if (left) {
      while (start < end && stripped(s.codePointAt(start), chars))
        start += Character.charCount(s.codePointAt(start));
    }
    if (right) {
      while (end > start && stripped(s.codePointBefore(end), chars))
        end -= Character.charCount(s.codePointBefore(end));
    }
    return s.substring(start, end);
  }

  private static boolean stripped(int cp, String chars) {
    return chars == null ? Values.isPySpace(cp) : chars.codePoints().anyMatch(c -> c == cp);
  }

  private static String replace(String s, String old, String replacement, long count) {
    if (count < 0) {
      if (old.isEmpty()) {
        StringBuilder sb = new StringBuilder(replacement);
        s.codePoints().forEach(cp -> sb.appendCodePoint(cp).append(replacement));
        return sb.toString();
      }
      return s.replace(old, replacement);
    }
    StringBuilder sb = new StringBuilder();
    int start = 0;
    for (long n = 0; n < count && !old.isEmpty(); n++) {
      int idx = s.indexOf(old, start);
      if (idx < 0) break;
      sb.append(s, start, idx).append(replacement);
      start = idx + old.length();
    }
    return sb.append(s.substring(start)).toString();
  }

  /** Python's {@code str.title}: uppercase after any non-letter, lowercase otherwise. */
  static String title(String s) {
    StringBuilder sb = new StringBuilder();
    boolean prevCased = false;
    for (int i = 0; i < s.length(); ) {
      int cp = s.codePointAt(i);
      sb.appendCodePoint(prevCased ? Character.toLowerCase(cp) : Character.toTitleCase(cp));
      prevCased = Character.isLetter(cp);
      i += Character.charCount(cp);
    }
    return sb.toString();
  }

  private static long cpIndex(String s, int utf16Index) {
    return utf16Index < 0 ? -1 : s.codePointCount(0, utf16Index);
  }

  private static long count(String s, String sub) {
    if (sub.isEmpty()) return s.codePointCount(0, s.length()) + 1;
    long n = 0;
    for (int i = s.indexOf(sub); i >= 0; i = s.indexOf(sub, i + sub.length())) n++;
    return n;
  }

  /**
   * {@code str.format} with {@code {}}, {@code {0}} and {@code {name}} fields (no format specs).
   */
  private static String format(String s, List<Object> args, Map<String, Object> kwargs) {
    StringBuilder sb = new StringBuilder();
    int auto = 0;
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == '{' && i + 1 < s.length() && s.charAt(i + 1) == '{') {
        sb.append('{');
        i++;
      } else if (c == '}' && i + 1 < s.length() && s.charAt(i + 1) == '}') {
        sb.append('}');
        i++;
      } else if (c == '{') {
        int end = s.indexOf('}', i);
        if (end < 0) throw new TemplateException("Single '{' encountered in format string");
        String field = s.substring(i + 1, end);
        if (field.contains(":") || field.contains("!"))
          throw new TemplateException("format specs are not supported: {" + field + "}");
        Object v;
        if (field.isEmpty()) v = arg(args, auto++);
        else if (field.chars().allMatch(Character::isDigit)) v = arg(args, Integer.parseInt(field));
        else if (kwargs.containsKey(field)) v = kwargs.get(field);
        else throw new TemplateException("KeyError: '" + field + "'");
        sb.append(Values.str(v));
        i = end;
      } else {
        sb.append(c);
      }
    }
    return sb.toString();
  }
}
