package dev.troupe.gateway.preview.training;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.gateway.http.ValidationException;
import dev.troupe.gateway.preview.Text;
import dev.troupe.protocol.Json;
import dev.troupe.protocol.api.ValidationErrorResponse.Detail;
import dev.troupe.protocol.cluster.TrainingConfig;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

/**
 * Validates a {@code POST /v1/preview/training-jobs} body ({@code {model_id, trajectory_groups,
 * experimental_config}}) and converts it: every problem is collected with its FastAPI {@code loc}
 * (422 {@code detail[]}); the groups are kept as compact JSON bytes (unknown fields included); the
 * experimental config gets its defaults ({@link TrainingConfig#resolve}).
 */
final class TrainingJobRequestParser {
  private static final int MAX_DETAILS = 1000;

  /** Groups of one job, journaled with it (the log endpoint's per-request bound). */
  static final int MAX_GROUPS = 10_000;

  /** A valid request. {@code modelId} is null when it is not a UUID (no such model: 404). */
  record Parsed(String modelId, String rawModelId, List<byte[]> groups, TrainingConfig config) {}

  private final List<Detail> problems = new ArrayList<>();

  private TrainingJobRequestParser() {}

  static Parsed parse(JsonNode body) {
    return new TrainingJobRequestParser().run(body);
  }

  private void add(List<Object> loc, String msg, String type) {
    if (problems.size() < MAX_DETAILS) problems.add(new Detail(loc, msg, type));
  }

  private static List<Object> loc(List<Object> parent, Object... more) {
    List<Object> l = new ArrayList<>(parent);
    for (Object o : more) l.add(o);
    return l;
  }

  private Parsed run(JsonNode body) {
    List<Object> root = List.of("body");
    if (body == null || !body.isObject()) {
      add(
          root,
          "Input should be a valid dictionary or object to extract fields from",
          "model_attributes_type");
      throw new ValidationException(problems);
    }
    // The groups and the config are journaled with the job: text that cannot be stored is refused.
    Text.findUnstorable(body, root, at -> add(at, Text.UNSTORABLE, Text.UNSTORABLE_TYPE));
    JsonNode id = body.get("model_id");
    String raw = null;
    if (id == null || id.isNull()) add(loc(root, "model_id"), "Field required", "missing");
    else if (!id.isTextual())
      add(loc(root, "model_id"), "Input should be a valid string", "string_type");
    else raw = id.asText();

    List<byte[]> groups = new ArrayList<>();
    JsonNode gs = body.get("trajectory_groups");
    if (gs == null || gs.isNull()) add(loc(root, "trajectory_groups"), "Field required", "missing");
    else if (!gs.isArray())
      add(loc(root, "trajectory_groups"), "Input should be a valid list", "list_type");
    else if (gs.size() > MAX_GROUPS)
      add(
          loc(root, "trajectory_groups"),
          "List should have at most "
              + MAX_GROUPS
              + " items after validation, not "
              + gs.size()
              + " (one job's limit)",
          "too_long");
    else
      for (int i = 0; i < gs.size(); i++) {
        List<Object> gl = loc(root, "trajectory_groups", i);
        JsonNode g = gs.get(i);
        if (!g.isObject()) {
          add(
              gl,
              "Input should be a valid dictionary or object to extract fields from",
              "model_attributes_type");
          continue;
        }
        JsonNode ts = g.get("trajectories");
        if (ts == null || !ts.isArray()) {
          add(
              loc(gl, "trajectories"),
              ts == null ? "Field required" : "Input should be a valid list",
              ts == null ? "missing" : "list_type");
          continue;
        }
        for (int j = 0; j < ts.size(); j++) trajectory(ts.get(j), loc(gl, "trajectories", j));
        if (problems.isEmpty()) {
          try {
            groups.add(Json.mapper().writeValueAsBytes(g));
          } catch (java.io.IOException e) {
            throw new IllegalStateException(e);
          }
        }
      }

    TrainingConfig config =
        config(body.get("experimental_config"), loc(root, "experimental_config"));
    if (!problems.isEmpty()) throw new ValidationException(problems);
    String modelId;
    try {
      modelId = UUID.fromString(raw).toString();
    } catch (IllegalArgumentException e) {
      modelId = null;
    }
    return new Parsed(modelId, raw, groups, config);
  }

  private void trajectory(JsonNode t, List<Object> l) {
    if (!t.isObject()) {
      add(
          l,
          "Input should be a valid dictionary or object to extract fields from",
          "model_attributes_type");
      return;
    }
    JsonNode r = t.get("reward");
    if (r == null || r.isNull()) add(loc(l, "reward"), "Field required", "missing");
    else if (!r.isNumber()) add(loc(l, "reward"), "Input should be a valid number", "float_type");
    else if (!Double.isFinite(r.asDouble()))
      add(loc(l, "reward"), "Input should be a finite number", "finite_number");
    messages(t.get("messages_and_choices"), loc(l, "messages_and_choices"));
    JsonNode hs = t.get("additional_histories");
    if (hs != null && !hs.isNull()) {
      if (!hs.isArray())
        add(loc(l, "additional_histories"), "Input should be a valid list", "list_type");
      else
        for (int k = 0; k < hs.size(); k++) {
          JsonNode h = hs.get(k);
          if (!h.isObject())
            add(
                loc(l, "additional_histories", k),
                "Input should be a valid dictionary or object to extract fields from",
                "model_attributes_type");
          else
            messages(
                h.get("messages_and_choices"),
                loc(l, "additional_histories", k, "messages_and_choices"));
        }
    }
    JsonNode tools = t.get("tools");
    if (tools != null && !tools.isNull() && !tools.isArray())
      add(loc(l, "tools"), "Input should be a valid list", "list_type");
  }

  private void messages(JsonNode ms, List<Object> l) {
    if (ms == null || ms.isNull()) {
      add(l, "Field required", "missing");
      return;
    }
    if (!ms.isArray()) {
      add(l, "Input should be a valid list", "list_type");
      return;
    }
    for (int i = 0; i < ms.size(); i++) {
      JsonNode m = ms.get(i);
      if (!m.isObject())
        add(
            loc(l, i),
            "Input should be a valid dictionary or object to extract fields from",
            "model_attributes_type");
      else if (!m.has("role") && !m.has("message") && !m.has("finish_reason"))
        add(
            loc(l, i),
            "Value error, neither a message (role) nor a choice (message, finish_reason)",
            "value_error");
    }
  }

  private TrainingConfig config(JsonNode c, List<Object> l) {
    if (c == null || c.isNull()) return TrainingConfig.defaults();
    if (!c.isObject()) {
      add(
          l,
          "Input should be a valid dictionary or object to extract fields from",
          "model_attributes_type");
      return null;
    }
    int before = problems.size();
    Double balance = number(c, "advantage_balance", l);
    Double eps = number(c, "epsilon", l);
    Double epsHigh = number(c, "epsilon_high", l);
    String level = null;
    JsonNode lv = c.get("importance_sampling_level");
    if (lv != null && !lv.isNull()) {
      if (!lv.isTextual())
        add(loc(l, "importance_sampling_level"), "Input should be a valid string", "string_type");
      else if (!List.of("token", "sequence", "average", "geometric_average").contains(lv.asText()))
        add(
            loc(l, "importance_sampling_level"),
            "Input should be 'token', 'sequence', 'average' or 'geometric_average'",
            "literal_error");
      else level = lv.asText();
    }
    // ART's field is kimi_k2_tau; ext_k2_tau is accepted as an alias
    Double tau = number(c, c.has("kimi_k2_tau") ? "kimi_k2_tau" : "ext_k2_tau", l);
    Double lr = number(c, "learning_rate", l);
    Boolean mask = bool(c, "mask_prob_ratio", l);
    Double maxNeg = number(c, "max_negative_advantage_importance_sampling_weight", l);
    Boolean ppo = bool(c, "ppo", l);
    Boolean pre = bool(c, "precalculate_logprobs", l);
    Boolean scale = bool(c, "scale_rewards", l);
    if (problems.size() > before) return null;
    try {
      return TrainingConfig.resolve(
          balance, eps, epsHigh, level, tau, lr, mask, maxNeg, ppo, pre, scale);
    } catch (IllegalArgumentException e) {
      add(l, "Value error, " + e.getMessage(), "value_error");
      return null;
    }
  }

  private Double number(JsonNode c, String field, List<Object> l) {
    JsonNode v = c.get(field);
    if (v == null || v.isNull()) return null;
    if (!v.isNumber()) {
      add(loc(l, field), "Input should be a valid number", "float_type");
      return null;
    }
    return v.asDouble();
  }

  private Boolean bool(JsonNode c, String field, List<Object> l) {
    JsonNode v = c.get(field);
    if (v == null || v.isNull()) return null;
    if (!v.isBoolean()) {
      add(loc(l, field), "Input should be a valid boolean", "bool_type");
      return null;
    }
    return v.asBoolean();
  }
}
