package dev.troupe.protocol;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.datatype.jdk8.Jdk8Module;

/**
 * The one JSON setup shared by the HTTP layer and tools: unknown fields ignored, no nulls dropped.
 */
public final class Json {
  private static final ObjectMapper MAPPER =
      JsonMapper.builder()
          .addModule(new Jdk8Module())
          .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
          .enable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES)
          .serializationInclusion(JsonInclude.Include.ALWAYS)
          .build();

  private Json() {}

  /** A shared, thread-safe mapper. Do not reconfigure it; copy() it for variations. */
  public static ObjectMapper mapper() {
    return MAPPER;
  }
}
