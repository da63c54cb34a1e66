package dev.troupe.engine.structured.syntax;

import dev.troupe.engine.structured.grammar.Expr;
import java.util.Map;

/**
 * The string {@code format}s a JSON schema may constrain, as character-level languages. Each is a
 * subset of what the format's RFC allows, chosen so that every string produced also passes strict
 * parsers (no February 29–31 problems, no leap seconds, UTC offsets within java.time's ±18 h, no
 * leading zeros in IPv4 octets, full eight-group IPv6) and whose automaton stays small (host labels
 * of at most 24 characters, email local parts of at most 37).
 */
final class JsonFormats {

  private JsonFormats() {}

  private static final String DATE =
      "[0-9]{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|02-(?:0[1-9]|1[0-9]|2[0-8]))";
  private static final String TIME =
      "(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\\.[0-9]{1,9})?(?:Z|[+-](?:0[0-9]|1[0-7]):[0-5][0-9])";
  // labels of at most 24 characters (RFC 1035 allows 63): a valid subset with a small automaton
  private static final String LABEL = "[A-Za-z0-9](?:[A-Za-z0-9-]{0,22}[A-Za-z0-9])?";
  private static final String ATOM = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]";
  private static final String OCTET = "(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])";
  private static final String PCHAR = "(?:[A-Za-z0-9._~!$&'()*+,;=:@-]|%[0-9A-Fa-f]{2})";

  private static final Map<String, String> REGEX =
      Map.ofEntries(
          Map.entry("date", DATE),
          Map.entry("time", TIME),
          Map.entry("date-time", DATE + "T" + TIME),
          Map.entry(
              "uuid",
              "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"),
          Map.entry(
              "email",
              ATOM
                  + "{1,24}(?:\\."
                  + ATOM
                  + "{1,12})?@"
                  + LABEL
                  + "(?:\\."
                  + LABEL
                  + "){0,2}\\.[A-Za-z]{2,6}"),
          Map.entry("hostname", LABEL + "(?:\\." + LABEL + "){0,2}"),
          Map.entry("ipv4", "(?:" + OCTET + "\\.){3}" + OCTET),
          Map.entry("ipv6", "(?:[0-9a-fA-F]{1,4}:){7}[0-9a-fA-F]{1,4}"),
          Map.entry(
              "uri",
              "[a-zA-Z][a-zA-Z0-9+.-]{0,15}://"
                  + LABEL
                  + "(?:\\."
                  + LABEL
                  + "){0,3}(?:/"
                  + PCHAR
                  + "*)*(?:\\?(?:"
                  + PCHAR
                  + "|[/?])*)?(?:#(?:"
                  + PCHAR
                  + "|[/?])*)?"),
          Map.entry("duration", "P(?:[0-9]{1,6}D|T[0-9]{1,6}[HMS]|[0-9]{1,4}Y(?:[0-9]{1,2}M)?)"));

  /** The character-level language of a format, or null if the format is unknown. */
  static Expr of(String format) {
    String regex = REGEX.get(format);
    return regex == null ? null : RegexParser.parse(regex);
  }

  static java.util.Set<String> known() {
    return REGEX.keySet();
  }
}
