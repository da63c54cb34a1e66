package dev.troupe.engine.template;

import dev.troupe.engine.ChatTemplate.TemplateException;
import java.time.ZonedDateTime;
import java.time.format.TextStyle;
import java.util.Locale;

/** Python's {@code datetime.strftime} in the C locale, for the directives templates use. */
final class Strftime {
  private Strftime() {}

  static String format(String pattern, ZonedDateTime t) {
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < pattern.length(); i++) {
      char c = pattern.charAt(i);
      if (c != '%' || i + 1 >= pattern.length()) {
        sb.append(c);
        continue;
      }
      char d = pattern.charAt(++i);
      switch (d) {
        case 'd' -> sb.append(String.format("%02d", t.getDayOfMonth()));
        case 'e' -> sb.append(String.format("%2d", t.getDayOfMonth()));
        case 'm' -> sb.append(String.format("%02d", t.getMonthValue()));
        case 'Y' -> sb.append(t.getYear());
        case 'y' -> sb.append(String.format("%02d", t.getYear() % 100));
        case 'H' -> sb.append(String.format("%02d", t.getHour()));
        case 'I' -> sb.append(String.format("%02d", (t.getHour() + 11) % 12 + 1));
        case 'M' -> sb.append(String.format("%02d", t.getMinute()));
        case 'S' -> sb.append(String.format("%02d", t.getSecond()));
        case 'f' -> sb.append(String.format("%06d", t.getNano() / 1000));
        case 'p' -> sb.append(t.getHour() < 12 ? "AM" : "PM");
        case 'b', 'h' -> sb.append(t.getMonth().getDisplayName(TextStyle.SHORT, Locale.ENGLISH));
        case 'B' -> sb.append(t.getMonth().getDisplayName(TextStyle.FULL, Locale.ENGLISH));
        case 'a' -> sb.append(t.getDayOfWeek().getDisplayName(TextStyle.SHORT, Locale.ENGLISH));
        case 'A' -> sb.append(t.getDayOfWeek().getDisplayName(TextStyle.FULL, Locale.ENGLISH));
        case 'j' -> sb.append(String.format("%03d", t.getDayOfYear()));
        case 'w' -> sb.append(t.getDayOfWeek().getValue() % 7);
        case 'u' -> sb.append(t.getDayOfWeek().getValue());
        case 'Z' -> sb.append(t.getZone().getId().equals("Z") ? "UTC" : t.getZone().getId());
        case 'z' ->
            sb.append(
                t.getOffset().getId().equals("Z")
                    ? "+0000"
                    : t.getOffset().getId().replace(":", ""));
        case 'F' ->
            sb.append(
                String.format("%d-%02d-%02d", t.getYear(), t.getMonthValue(), t.getDayOfMonth()));
        case 'T' ->
            sb.append(String.format("%02d:%02d:%02d", t.getHour(), t.getMinute(), t.getSecond()));
        case '%' -> sb.append('%');
        default -> throw new TemplateException("unsupported strftime directive %" + d);
      }
    }
    return sb.toString();
  }
}
