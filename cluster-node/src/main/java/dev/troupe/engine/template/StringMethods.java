package dev.troupe.engine.template;

import dev.troupe.engine.ChatTemplate.TemplateException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Python {@code str} methods templates call ({@code content.startswith(...)}, {@code split}...).
 * Every method that builds strings asks the render's {@link Budget} for their size before building
 * them, and charges the characters it scans.
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
          "index",
          "center",
          "ljust",
          "rjust",
          "zfill");

  private StringMethods() {}

  static boolean has(String name) {
    return NAMES.contains(name);
  }

  static Object call(
      String s, String name, List<Object> args, Map<String, Object> kwargs, Budget budget) {
    budget.work(s.length());
    return switch (name) {
      case "startswith" -> anyAffix(s, arg(args, 0), true);
      case "endswith" -> anyAffix(s, arg(args, 0), false);
      case "split" ->
          split(s, optString(args, 0, kwargs.get("sep")), maxSplit(args, kwargs), budget);
      case "rsplit" ->
          rsplit(s, optString(args, 0, kwargs.get("sep")), maxSplit(args, kwargs), budget);
      case "strip" -> strip(s, optString(args, 0, null), true, true, budget);
      case "lstrip" -> strip(s, optString(args, 0, null), true, false, budget);
      case "rstrip" -> strip(s, optString(args, 0, null), false, true, budget);
      case "replace" ->
          replace(
              s,
              str(arg(args, 0)),
              str(arg(args, 1)),
              args.size() > 2 ? Values.asLong(args.get(2)) : -1,
              budget);
      case "upper" -> changeCase(s, budget, x -> x.toUpperCase(java.util.Locale.ROOT));
      case "lower" -> changeCase(s, budget, x -> x.toLowerCase(java.util.Locale.ROOT));
      case "title" -> changeCase(s, budget, StringMethods::title);
      case "capitalize" ->
          changeCase(
              s,
              budget,
              x ->
                  x.isEmpty()
                      ? x
                      : x.substring(0, x.offsetByCodePoints(0, 1))
                              .toUpperCase(java.util.Locale.ROOT)
                          + x.substring(x.offsetByCodePoints(0, 1))
                              .toLowerCase(java.util.Locale.ROOT));
      case "center", "ljust", "rjust" -> pad(s, name, args, budget);
      case "zfill" -> zfill(s, Values.asLong(arg(args, 0)), budget);
      case "find" -> cpIndex(s, s.indexOf(str(arg(args, 0))));
      case "rfind" -> cpIndex(s, s.lastIndexOf(str(arg(args, 0))));
      case "index" -> {
        int i = s.indexOf(str(arg(args, 0)));
        if (i < 0) throw new TemplateException("substring not found");
        yield cpIndex(s, i);
      }
      case "count" -> count(s, str(arg(args, 0)));
      case "splitlines" -> {
        List<Object> out = new ArrayList<>();
        int start = 0;
        for (int i = 0; i < s.length(); i++) {
          char c = s.charAt(i);
          if (!isLineBreak(c)) continue;
          out.add(part(s, start, i, out, budget));
          if (c == '\r' && i + 1 < s.length() && s.charAt(i + 1) == '\n') i++;
          start = i + 1;
        }
        if (start < s.length()) out.add(part(s, start, s.length(), out, budget));
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
      case "removeprefix" -> {
        String prefix = str(arg(args, 0));
        yield !prefix.isEmpty() && s.startsWith(prefix)
            ? substring(s, prefix.length(), s.length(), budget)
            : s;
      }
      case "removesuffix" -> {
        String suffix = str(arg(args, 0));
        yield !suffix.isEmpty() && s.endsWith(suffix)
            ? substring(s, 0, s.length() - suffix.length(), budget)
            : s;
      }
      case "join" -> {
        List<Object> items = Values.iterate(arg(args, 0), budget);
        for (int i = 0; i < items.size(); i++)
          if (!(items.get(i) instanceof String))
            throw new TemplateException("sequence item " + i + ": expected str instance");
        yield join(s, items, budget);
      }
      case "format" -> format(s, args, kwargs, budget);
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

  /** {@code parts} joined by {@code sep}; the length is asked for before building. */
  static String join(String sep, List<Object> parts, Budget budget) {
    long total = parts.isEmpty() ? 0 : (long) sep.length() * (parts.size() - 1);
    for (Object p : parts) total += ((String) p).length();
    budget.chars(total);
    StringBuilder sb = new StringBuilder((int) total);
    for (int i = 0; i < parts.size(); i++) {
      if (i > 0) sb.append(sep);
      sb.append((String) parts.get(i));
    }
    return sb.toString();
  }

  /** A new piece of {@code s} for a list being built (charged as a string plus a list slot). */
  private static String part(String s, int from, int to, List<Object> list, Budget budget) {
    if (list.size() >= budget.limits.maxValueLength()) budget.items(list.size() + 1L);
    budget.allocate(Budget.SLOT_BYTES + Budget.STRING_BYTES);
    return substring(s, from, to, budget);
  }

  private static String substring(String s, int from, int to, Budget budget) {
    if (from == 0 && to == s.length()) return s;
    budget.chars(to - from);
    return s.substring(from, to);
  }

  private static String changeCase(
      String s, Budget budget, java.util.function.UnaryOperator<String> change) {
    budget.chars(s.length());
    String out = change.apply(s);
    if (out.length() > s.length()) budget.chars(out.length()); // 'ß'.upper() is 'SS'
    return out;
  }

  /** {@code center}, {@code ljust}, {@code rjust} as CPython pads. */
  private static String pad(String s, String name, List<Object> args, Budget budget) {
    long width = Values.asLong(arg(args, 0));
    String fill = args.size() > 1 ? str(args.get(1)) : " ";
    if (fill.codePointCount(0, fill.length()) != 1)
      throw new TemplateException("The fill character must be exactly one character long");
    long length = s.codePointCount(0, s.length());
    if (width <= length) return s;
    long margin = width - length;
    budget.chars(s.length() + margin * fill.length());
    long left =
        switch (name) {
          case "ljust" -> 0;
          case "rjust" -> margin;
          default -> margin / 2 + (margin & width & 1);
        };
    return fill.repeat((int) left) + s + fill.repeat((int) (margin - left));
  }

  private static String zfill(String s, long width, Budget budget) {
    if (width <= s.length()) return s;
    budget.chars(width);
    int sign = !s.isEmpty() && (s.charAt(0) == '+' || s.charAt(0) == '-') ? 1 : 0;
    return s.substring(0, sign) + "0".repeat((int) (width - s.length())) + s.substring(sign);
  }

  /** Python's {@code str.splitlines} boundaries. */
  private static boolean isLineBreak(char c) {
    return c == '\n'
        || c == '\r'
        || c == '\u000b'
        || c == '\u000c'
        || (c >= '\u001c' && c <= '\u001e')
        || c == '\u0085'
        || c == '\u2028'
        || c == '\u2029';
  }

  static List<Object> split(String s, String sep, long maxSplit, Budget budget) {
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
          out.add(part(s, i, end, out, budget));
          break;
        }
        int j = i;
        while (j < n && !Values.isPySpace(s.codePointAt(j)))
          j += Character.charCount(s.codePointAt(j));
        out.add(part(s, i, j, out, budget));
        i = j;
      }
      return out;
    }
    if (sep.isEmpty()) throw new TemplateException("empty separator");
    int start = 0;
    while (maxSplit < 0 || out.size() < maxSplit) {
      int idx = s.indexOf(sep, start);
      if (idx < 0) break;
      out.add(part(s, start, idx, out, budget));
      start = idx + sep.length();
    }
    out.add(part(s, start, s.length(), out, budget));
    return out;
  }

  private static List<Object> rsplit(String s, String sep, long maxSplit, Budget budget) {
    if (sep == null || maxSplit < 0) return split(s, sep, maxSplit, budget);
    if (sep.isEmpty()) throw new TemplateException("empty separator");
    List<Object> out = new ArrayList<>();
    int end = s.length();
    while (out.size() < maxSplit) {
      int idx = s.lastIndexOf(sep, end - sep.length());
      if (idx < 0) break;
      out.add(0, part(s, idx + sep.length(), end, out, budget));
      end = idx;
    }
    out.add(0, part(s, 0, end, out, budget));
    return out;
  }

  static String strip(String s, String chars, boolean left, boolean right, Budget budget) {
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
    return substring(s, start, end, budget);
  }

  private static boolean stripped(int cp, String chars) {
    return chars == null ? Values.isPySpace(cp) : chars.codePoints().anyMatch(c -> c == cp);
  }

  /** Python's {@code str.replace}: the result's length is asked for before it is built. */
  private static String replace(
      String s, String old, String replacement, long count, Budget budget) {
    long occurrences;
    if (old.isEmpty()) occurrences = s.codePointCount(0, s.length()) + 1L;
    else {
      occurrences = 0;
      for (int i = s.indexOf(old); i >= 0; i = s.indexOf(old, i + old.length())) occurrences++;
    }
    if (count >= 0) occurrences = Math.min(occurrences, count);
    if (occurrences == 0) return s;
    long delta = (long) replacement.length() - old.length();
    budget.chars(
        Math.multiplyHigh(occurrences, delta) != 0
            ? Long.MAX_VALUE
            : s.length() + occurrences * delta);
    if (old.isEmpty()) {
      StringBuilder sb = new StringBuilder();
      long n = 0;
      for (int i = 0; i < s.length(); ) {
        if (n++ < occurrences) sb.append(replacement);
        int cp = s.codePointAt(i);
        sb.appendCodePoint(cp);
        i += Character.charCount(cp);
      }
      if (n < occurrences) sb.append(replacement);
      return sb.toString();
    }
    StringBuilder sb = new StringBuilder();
    int start = 0;
    for (long n = 0; n < occurrences; n++) {
      int idx = s.indexOf(old, start);
      sb.append(s, start, idx).append(replacement);
      start = idx + old.length();
    }
    return sb.append(s, start, s.length()).toString();
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
  private static String format(
      String s, List<Object> args, Map<String, Object> kwargs, Budget budget) {
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
        else if (field.chars().allMatch(ch -> ch >= '0' && ch <= '9'))
          v =
              field.length() > 9
                  ? arg(args, Integer.MAX_VALUE)
                  : arg(args, Integer.parseInt(field));
        else if (kwargs.containsKey(field)) v = kwargs.get(field);
        else throw new TemplateException("KeyError: '" + field + "'");
        String text = Values.str(v, budget);
        if ((long) sb.length() + text.length() > budget.limits.maxValueLength())
          budget.chars((long) sb.length() + text.length());
        sb.append(text);
        i = end;
      } else {
        sb.append(c);
      }
    }
    budget.chars(sb.length());
    return sb.toString();
  }
}
