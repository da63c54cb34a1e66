package dev.troupe.gateway.preview;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParseException;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonStreamContext;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.exc.StreamConstraintsException;
import com.fasterxml.jackson.core.json.JsonReadFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import dev.troupe.protocol.api.ValidationErrorResponse.Detail;
import dev.troupe.protocol.cluster.TrajectoryLogProtocol.SplitStats;
import java.io.IOException;
import java.io.InputStream;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Reads a log request ({@code {model_id?, split, trajectory_groups:[{trajectories:[…]}]}}) from a
 * stream, one group at a time: each group is parsed into a tree, validated, folded into the split
 * statistics and kept only as compact JSON bytes, so a 50 MB body never exists as one object tree.
 * Every problem is collected with its FastAPI {@code loc}; unknown fields are kept as they are.
 *
 * <p>Everything stored is checked to be storable: a string or key holding a lone surrogate is a 422
 * at its {@code loc}, and the reader's limits are this endpoint's own, each a 422 at the {@code
 * loc} where it was crossed: {@link #MAX_DEPTH} levels of nesting, numbers of {@link
 * #MAX_NUMBER_LENGTH} characters, keys of {@link #MAX_NAME_LENGTH}, {@link #MAX_GROUPS} groups
 * (counted without being held). Strings have no limit below the body's size (the 413 of {@code
 * troupe.gateway.max-body-size}).
 */
final class TrajectoryLogParser {
  /**
   * Nesting of the whole body: real trajectories nest about 15 levels (body, group, trajectory,
   * message, content part, tool schema…); deeper input only costs every later reader of the stored
   * groups (training, export) stack.
   */
  static final int MAX_DEPTH = 100;

  /** A longer number is not a float anyone logs (Python refuses ints over 4300 digits). */
  static final int MAX_NUMBER_LENGTH = 1000;

  static final int MAX_NAME_LENGTH = 50_000;

  /**
   * Groups in one request. Each is one row of one database transaction, and a request of 100,000
   * small groups took a node past a 4 GB heap; ART logs one step's groups at a time (tens).
   */
  static final int MAX_GROUPS = 10_000;

  /**
   * NaN and Infinity parse, so that they can be refused as non-finite rewards (not as bad JSON).
   * The read constraints are the limits above; strings are left to the body-size limit.
   */
  private static final ObjectMapper MAPPER =
      JsonMapper.builder(
              JsonFactory.builder()
                  .enable(JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS)
                  .streamReadConstraints(
                      StreamReadConstraints.builder()
                          .maxNestingDepth(MAX_DEPTH)
                          .maxNumberLength(MAX_NUMBER_LENGTH)
                          .maxNameLength(MAX_NAME_LENGTH)
                          .maxStringLength(Integer.MAX_VALUE)
                          .build())
                  .build())
          .build();

  /** The outcome: the groups and their statistics, or the problems. */
  record Parsed(
      String split, String modelId, List<byte[]> groups, SplitStats stats, List<Detail> problems) {}

  private TrajectoryLogParser() {}

  static Parsed parse(InputStream in) throws IOException {
    Problems p = new Problems();
    String split = null;
    String modelId = null;
    boolean sawSplit = false;
    boolean sawGroups = false;
    List<byte[]> groups = new ArrayList<>();
    SplitStats stats = SplitStats.EMPTY;
    // Read as strict UTF-8: Jackson's byte parser lets some invalid sequences through.
    JsonParser jp =
        MAPPER.createParser(
            new java.io.InputStreamReader(in, dev.troupe.gateway.http.Utf8.strictDecoder()));
    try (jp) {
      JsonToken t = jp.nextToken();
      if (t != JsonToken.START_OBJECT) {
        if (t == null) p.add(List.of("body"), "Field required", "missing");
        else
          p.add(
              List.of("body"),
              "Input should be a valid dictionary or object to extract fields from",
              "model_attributes_type");
        return new Parsed(null, null, List.of(), stats, p.details());
      }
      while (jp.nextToken() == JsonToken.FIELD_NAME) {
        String field = jp.currentName();
        JsonToken v = jp.nextToken();
        switch (field) {
          case "split" -> {
            sawSplit = true;
            if (v == JsonToken.VALUE_STRING) {
              split = jp.getText();
              storable(split, List.of("body", "split"), p);
            } else {
              p.add(List.of("body", "split"), "Input should be a valid string", "string_type");
              jp.skipChildren();
            }
          }
          case "model_id" -> {
            if (v == JsonToken.VALUE_STRING) {
              modelId = jp.getText();
              storable(modelId, List.of("body", "model_id"), p);
            } else if (v != JsonToken.VALUE_NULL) {
              p.add(List.of("body", "model_id"), "Input should be a valid string", "string_type");
              jp.skipChildren();
            }
          }
          case "trajectory_groups" -> {
            sawGroups = true;
            if (v != JsonToken.START_ARRAY) {
              p.add(
                  List.of("body", "trajectory_groups"),
                  "Input should be a valid list",
                  "list_type");
              jp.skipChildren();
              continue;
            }
            int i = 0;
            for (JsonToken tk = jp.nextToken(); tk != JsonToken.END_ARRAY; tk = jp.nextToken()) {
              if (tk == null) throw new JsonParseException(jp, "Unexpected end-of-input");
              if (i >= MAX_GROUPS) { // counted, never held: the request fails
                jp.skipChildren();
                i++;
                continue;
              }
              JsonNode group = MAPPER.readTree(jp);
              List<Object> groupLoc = List.of("body", "trajectory_groups", i);
              SplitStats g = group(group, groupLoc, p);
              storable(group, groupLoc, p);
              if (p.isEmpty()) {
                groups.add(MAPPER.writeValueAsBytes(group));
                stats = stats.plus(g);
              } else {
                groups.clear(); // the request fails: stop holding its groups
              }
              i++;
            }
            if (i > MAX_GROUPS) {
              groups.clear();
              p.add(List.of("body", "trajectory_groups"), tooLong(i), "too_long");
            }
          }
          default -> jp.skipChildren();
        }
      }
      // Nothing may follow the object, as on every other endpoint (FAIL_ON_TRAILING_TOKENS).
      if (jp.nextToken() != null)
        throw new JsonParseException(jp, "Trailing data after the request body");
    } catch (StreamConstraintsException e) {
      // One of this endpoint's limits (the read constraints above), where it was crossed.
      p.add(where(jp.getParsingContext()), "Value error, " + limitCrossed(e), "value_error");
      return new Parsed(null, null, List.of(), SplitStats.EMPTY, p.details());
    } catch (java.nio.charset.CharacterCodingException e) {
      // not UTF-8: FastAPI's answer for a body it cannot decode, at about where it stopped
      long at = jp.currentLocation().getCharOffset();
      p.add(List.of("body", Math.max(0, at)), "JSON decode error", "json_invalid");
      return new Parsed(null, null, List.of(), SplitStats.EMPTY, p.details());
    } catch (JsonParseException e) {
      long offset = e.getLocation() == null ? 0 : e.getLocation().getCharOffset();
      p.add(List.of("body", offset < 0 ? 0 : offset), "JSON decode error", "json_invalid");
      return new Parsed(null, null, List.of(), SplitStats.EMPTY, p.details());
    }
    if (!sawSplit) p.add(List.of("body", "split"), "Field required", "missing");
    if (!sawGroups) p.add(List.of("body", "trajectory_groups"), "Field required", "missing");
    if (!p.isEmpty()) groups = List.of();
    return new Parsed(split, modelId, groups, stats, p.details());
  }

  /** pydantic's wording for a list over its {@code max_length}. */
  static String tooLong(int items) {
    return "List should have at most "
        + MAX_GROUPS
        + " items after validation, not "
        + items
        + " (one request's limit; log larger batches in several requests)";
  }

  /** Validates one group; returns its statistics (meaningless when problems were added). */
  private static SplitStats group(JsonNode g, List<Object> loc, Problems p) {
    if (!g.isObject()) {
      p.add(
          loc,
          "Input should be a valid dictionary or object to extract fields from",
          "model_attributes_type");
      return SplitStats.EMPTY;
    }
    JsonNode ts = g.get("trajectories");
    if (ts == null) {
      p.add(Problems.loc(loc, "trajectories"), "Field required", "missing");
      return SplitStats.EMPTY;
    }
    if (!ts.isArray()) {
      p.add(Problems.loc(loc, "trajectories"), "Input should be a valid list", "list_type");
      return SplitStats.EMPTY;
    }
    double[] rewards = new double[ts.size()];
    List<Map<String, Double>> metrics = new ArrayList<>(ts.size());
    for (int j = 0; j < ts.size(); j++) {
      List<Object> tl = Problems.loc(loc, "trajectories", j);
      JsonNode t = ts.get(j);
      if (!t.isObject()) {
        p.add(
            tl,
            "Input should be a valid dictionary or object to extract fields from",
            "model_attributes_type");
        continue;
      }
      messages(t, tl, p, true);
      rewards[j] = reward(t.get("reward"), Problems.loc(tl, "reward"), p);
      metrics.add(numericMap(t.get("metrics"), Problems.loc(tl, "metrics"), p));
      numericMap(t.get("auto_metrics"), Problems.loc(tl, "auto_metrics"), p);
      metadata(t.get("metadata"), Problems.loc(tl, "metadata"), p);
      strings(t.get("logs"), Problems.loc(tl, "logs"), p);
      list(t.get("tools"), Problems.loc(tl, "tools"), p);
      startTime(t.get("start_time"), Problems.loc(tl, "start_time"), p);
      JsonNode histories = t.get("additional_histories");
      if (list(histories, Problems.loc(tl, "additional_histories"), p)) {
        for (int h = 0; h < histories.size(); h++) {
          List<Object> hl = Problems.loc(tl, "additional_histories", h);
          JsonNode hist = histories.get(h);
          if (!hist.isObject())
            p.add(
                hl,
                "Input should be a valid dictionary or object to extract fields from",
                "model_attributes_type");
          else messages(hist, hl, p, true);
        }
      }
    }
    return SplitStats.ofGroup(rewards, metrics);
  }

  /** {@code messages_and_choices}: messages (with a string role) or choices (with a message). */
  private static void messages(JsonNode owner, List<Object> loc, Problems p, boolean required) {
    JsonNode mc = owner.get("messages_and_choices");
    List<Object> ml = Problems.loc(loc, "messages_and_choices");
    if (mc == null) {
      if (required) p.add(ml, "Field required", "missing");
      return;
    }
    if (!mc.isArray()) {
      p.add(ml, "Input should be a valid list", "list_type");
      return;
    }
    for (int k = 0; k < mc.size(); k++) {
      JsonNode m = mc.get(k);
      List<Object> kl = Problems.loc(ml, k);
      if (!m.isObject()) {
        p.add(
            kl,
            "Input should be a valid dictionary or object to extract fields from",
            "model_attributes_type");
        continue;
      }
      if (m.has("role")) {
        if (!m.get("role").isTextual())
          p.add(Problems.loc(kl, "role"), "Input should be a valid string", "string_type");
      } else if (m.has("message") || m.has("finish_reason")) {
        JsonNode msg = m.get("message");
        if (msg == null) p.add(Problems.loc(kl, "message"), "Field required", "missing");
        else if (!msg.isObject())
          p.add(
              Problems.loc(kl, "message"),
              "Input should be a valid dictionary or object to extract fields from",
              "model_attributes_type");
        else if (msg.has("role") && !msg.get("role").isTextual())
          p.add(
              Problems.loc(kl, "message", "role"), "Input should be a valid string", "string_type");
      } else {
        p.add(Problems.loc(kl, "role"), "Field required", "missing");
      }
    }
  }

  private static double reward(JsonNode r, List<Object> loc, Problems p) {
    if (r == null) {
      p.add(loc, "Field required", "missing");
      return 0;
    }
    double v;
    if (r.isNumber()) v = r.doubleValue();
    else if (r.isTextual()) {
      try {
        v = Double.parseDouble(r.textValue().trim());
      } catch (NumberFormatException e) {
        p.add(
            loc,
            "Input should be a valid number, unable to parse string as a number",
            "float_parsing");
        return 0;
      }
    } else {
      p.add(loc, "Input should be a valid number", "float_type");
      return 0;
    }
    if (!Double.isFinite(v)) {
      p.add(loc, "Input should be a finite number", "finite_number");
      return 0;
    }
    return v;
  }

  /**
   * {@code metrics}/{@code auto_metrics}: numbers or booleans (true = 1); other keys are errors.
   */
  private static Map<String, Double> numericMap(JsonNode m, List<Object> loc, Problems p) {
    Map<String, Double> out = new LinkedHashMap<>();
    if (m == null || m.isNull()) return out;
    if (!m.isObject()) {
      p.add(loc, "Input should be a valid dictionary", "dict_type");
      return out;
    }
    for (Map.Entry<String, JsonNode> e : m.properties()) {
      JsonNode v = e.getValue();
      if (v.isBoolean()) out.put(e.getKey(), v.booleanValue() ? 1.0 : 0.0);
      else if (v.isNumber() && Double.isFinite(v.doubleValue()))
        out.put(e.getKey(), v.doubleValue());
      else if (v.isNumber())
        p.add(Problems.loc(loc, e.getKey()), "Input should be a finite number", "finite_number");
      else p.add(Problems.loc(loc, e.getKey()), "Input should be a valid number", "float_type");
    }
    return out;
  }

  private static void metadata(JsonNode m, List<Object> loc, Problems p) {
    if (m == null || m.isNull()) return;
    if (!m.isObject()) {
      p.add(loc, "Input should be a valid dictionary", "dict_type");
      return;
    }
    for (Map.Entry<String, JsonNode> e : m.properties()) {
      if (e.getValue().isContainerNode())
        p.add(Problems.loc(loc, e.getKey()), "Input should be a valid string", "string_type");
    }
  }

  private static void strings(JsonNode l, List<Object> loc, Problems p) {
    if (!list(l, loc, p)) return;
    for (int i = 0; i < l.size(); i++) {
      if (!l.get(i).isTextual())
        p.add(Problems.loc(loc, i), "Input should be a valid string", "string_type");
    }
  }

  /** True when {@code l} is a present, non-null list; a non-list is a problem. */
  private static boolean list(JsonNode l, List<Object> loc, Problems p) {
    if (l == null || l.isNull()) return false;
    if (!l.isArray()) {
      p.add(loc, "Input should be a valid list", "list_type");
      return false;
    }
    return true;
  }

  /** ISO 8601 date-time (with or without offset), a date, or Unix seconds, as pydantic accepts. */
  private static void startTime(JsonNode s, List<Object> loc, Problems p) {
    if (s == null || s.isNull() || s.isNumber()) return;
    if (!s.isTextual()) {
      p.add(loc, "Input should be a valid datetime", "datetime_type");
      return;
    }
    String v = s.textValue().trim();
    String iso = v.replace(' ', 'T');
    for (java.util.function.Consumer<String> f :
        List.<java.util.function.Consumer<String>>of(
            OffsetDateTime::parse, LocalDateTime::parse, LocalDate::parse)) {
      try {
        f.accept(iso.endsWith("z") ? iso.substring(0, iso.length() - 1) + "Z" : iso);
        return;
      } catch (DateTimeParseException e) {
        // try the next form
      }
    }
    p.add(loc, "Input should be a valid datetime, invalid datetime format", "datetime_parsing");
  }

  /** The FastAPI {@code loc} of the value the parser is in. */
  private static List<Object> where(JsonStreamContext context) {
    List<Object> reversed = new ArrayList<>();
    for (JsonStreamContext c = context; c != null && !c.inRoot(); c = c.getParent()) {
      if (c.inArray()) reversed.add(Math.max(0, c.getCurrentIndex()));
      else if (c.getCurrentName() != null) reversed.add(c.getCurrentName());
    }
    List<Object> loc = new ArrayList<>(List.of("body"));
    for (int i = reversed.size() - 1; i >= 0; i--) loc.add(reversed.get(i));
    return loc;
  }

  private static String limitCrossed(StreamConstraintsException e) {
    String m = String.valueOf(e.getOriginalMessage());
    if (m.contains("nesting depth"))
      return "nested deeper than " + MAX_DEPTH + " levels (the limit of this endpoint)";
    if (m.contains("Number value length"))
      return "a number of more than "
          + MAX_NUMBER_LENGTH
          + " characters (the limit of this endpoint)";
    if (m.contains("Name length"))
      return "a key of more than " + MAX_NAME_LENGTH + " characters (the limit of this endpoint)";
    return "over a limit of this endpoint: " + m;
  }

  /** A string that could not be stored (a lone surrogate) is a problem at {@code loc}. */
  private static void storable(String s, List<Object> loc, Problems p) {
    if (Text.loneSurrogate(s) >= 0) p.add(loc, Text.UNSTORABLE, Text.UNSTORABLE_TYPE);
  }

  /** Every string and key of a group tree, each problem at its own {@code loc}. */
  private static void storable(JsonNode node, List<Object> loc, Problems p) {
    Text.findUnstorable(node, loc, at -> p.add(at, Text.UNSTORABLE, Text.UNSTORABLE_TYPE));
  }

  /** For tests: parse from bytes. */
  static Parsed parse(byte[] body) throws IOException {
    return parse(new java.io.ByteArrayInputStream(body));
  }
}
