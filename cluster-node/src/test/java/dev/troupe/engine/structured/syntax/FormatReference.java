package dev.troupe.engine.structured.syntax;

import java.net.URI;
import java.time.Duration;
import java.time.LocalDate;
import java.time.OffsetDateTime;
import java.time.OffsetTime;
import java.time.Period;
import java.util.UUID;
import java.util.regex.Pattern;

/** Independent checks of string formats: standard parsers, and RFC grammars as Java regexes. */
final class FormatReference {

  private FormatReference() {}

  // RFC 5322 dot-atom local part, RFC 1035 labels
  private static final Pattern EMAIL =
      Pattern.compile(
          "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@"
              + "([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\\.)+[A-Za-z]{2,63}");
  private static final Pattern HOSTNAME =
      Pattern.compile(
          "[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*");

  static boolean valid(String format, String v) {
    try {
      switch (format) {
        case "date":
          return LocalDate.parse(v).toString().equals(v);
        case "time":
          OffsetTime.parse(v);
          return true;
        case "date-time":
          OffsetDateTime.parse(v);
          return true;
        case "email":
          return EMAIL.matcher(v).matches() && v.indexOf('@') <= 64 && v.length() <= 254;
        case "uuid":
          return UUID.fromString(v).toString().equalsIgnoreCase(v);
        case "uri":
          return new URI(v).isAbsolute();
        case "ipv4":
          String[] parts = v.split("\\.", -1);
          if (parts.length != 4) return false;
          for (String p : parts)
            if (p.isEmpty() || (p.length() > 1 && p.startsWith("0")) || Integer.parseInt(p) > 255)
              return false;
          return true;
        case "ipv6":
          return v.split(":", -1).length == 8
              && v.matches("[0-9A-Fa-f:]+")
              && java.net.InetAddress.getByName(v) instanceof java.net.Inet6Address;
        case "hostname":
          return HOSTNAME.matcher(v).matches() && v.length() <= 253;
        case "duration":
          if (v.startsWith("PT")) Duration.parse(v);
          else Period.parse(v);
          return true;
        default:
          return false;
      }
    } catch (Exception e) {
      return false;
    }
  }
}
