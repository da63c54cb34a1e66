package dev.troupe.protocol;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.cfg.CoercionAction;
import com.fasterxml.jackson.databind.cfg.CoercionInputShape;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.type.LogicalType;
import com.fasterxml.jackson.datatype.jdk8.Jdk8Module;

/**
 * The one JSON setup shared by the HTTP layer and tools: unknown fields ignored, no nulls dropped,
 * and strict where the OpenAI API is: nothing may follow the document, a string field takes only a
 * JSON string, a boolean field only {@code true}/{@code false} (or the strings {@code
 * "true"}/{@code "false"}, as pydantic's lax mode), a number field never a boolean or an empty
 * string, an integer field never a fractional number. Numeric strings ({@code "7"}, {@code "0.5"})
 * stay accepted for number fields, as pydantic accepts them.
 */
public final class Json {
  private static final ObjectMapper MAPPER =
      JsonMapper.builder()
          .addModule(new Jdk8Module())
          .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
          .enable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES)
          .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
          // Pydantic refuses 1.5 for an integer field; Jackson would silently truncate it.
          .disable(DeserializationFeature.ACCEPT_FLOAT_AS_INT)
          .withCoercionConfig(
              LogicalType.Textual,
              c ->
                  c.setCoercion(CoercionInputShape.Integer, CoercionAction.Fail)
                      .setCoercion(CoercionInputShape.Float, CoercionAction.Fail)
                      .setCoercion(CoercionInputShape.Boolean, CoercionAction.Fail))
          .withCoercionConfig(
              LogicalType.Boolean,
              c ->
                  c.setCoercion(CoercionInputShape.Integer, CoercionAction.Fail)
                      .setCoercion(CoercionInputShape.Float, CoercionAction.Fail)
                      .setCoercion(CoercionInputShape.EmptyString, CoercionAction.Fail))
          .withCoercionConfig(
              LogicalType.Integer,
              c ->
                  c.setCoercion(CoercionInputShape.Boolean, CoercionAction.Fail)
                      .setCoercion(CoercionInputShape.EmptyString, CoercionAction.Fail))
          .withCoercionConfig(
              LogicalType.Float,
              c ->
                  c.setCoercion(CoercionInputShape.Boolean, CoercionAction.Fail)
                      .setCoercion(CoercionInputShape.EmptyString, CoercionAction.Fail))
          .serializationInclusion(JsonInclude.Include.ALWAYS)
          .build();

  private Json() {}

  /** A shared, thread-safe mapper. Do not reconfigure it; copy() it for variations. */
  public static ObjectMapper mapper() {
    return MAPPER;
  }
}
