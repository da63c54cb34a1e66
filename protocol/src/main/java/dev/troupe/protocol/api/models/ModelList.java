package dev.troupe.protocol.api.models;

import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.annotation.JsonNaming;
import java.util.List;

/** {@code GET /v1/models}: {@code {"object":"list","data":[card…]}}, vLLM's card shape. */
@JsonPropertyOrder({"object", "data"})
public record ModelList(String object, List<ModelCard> data) {

  public ModelList {
    data = List.copyOf(data);
  }

  public static ModelList of(List<ModelCard> cards) {
    return new ModelList("list", cards);
  }

  /**
   * One served model.
   *
   * @param ownedBy {@code troupe}
   * @param root where the weights came from (a directory, or the built-in demo)
   * @param parent the base model of an adapter, else null
   * @param maxModelLen context length, null when unknown
   */
  @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
  @JsonPropertyOrder({
    "id",
    "object",
    "created",
    "owned_by",
    "root",
    "parent",
    "max_model_len",
    "permission"
  })
  public record ModelCard(
      String id,
      String object,
      long created,
      String ownedBy,
      String root,
      String parent,
      Integer maxModelLen,
      List<ModelPermission> permission) {}

  /** vLLM's fixed permission entry. */
  @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
  @JsonPropertyOrder({
    "id",
    "object",
    "created",
    "allow_create_engine",
    "allow_sampling",
    "allow_logprobs",
    "allow_search_indices",
    "allow_view",
    "allow_fine_tuning",
    "organization",
    "group",
    "is_blocking"
  })
  public record ModelPermission(
      String id,
      String object,
      long created,
      boolean allowCreateEngine,
      boolean allowSampling,
      boolean allowLogprobs,
      boolean allowSearchIndices,
      boolean allowView,
      boolean allowFineTuning,
      String organization,
      String group,
      boolean isBlocking) {

    public static ModelPermission standard(String id, long created) {
      return new ModelPermission(
          id, "model_permission", created, false, true, true, false, true, false, "*", null, false);
    }
  }
}
