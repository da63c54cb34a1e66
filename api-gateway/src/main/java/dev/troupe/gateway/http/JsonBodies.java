package dev.troupe.gateway.http;

import static org.apache.pekko.http.javadsl.server.Directives.complete;
import static org.apache.pekko.http.javadsl.server.Directives.extractRequest;
import static org.apache.pekko.http.javadsl.server.Directives.extractStrictEntity;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.exc.InputCoercionException;
import com.fasterxml.jackson.core.exc.StreamReadException;
import com.fasterxml.jackson.databind.DeserializationContext;
import com.fasterxml.jackson.databind.JsonDeserializer;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.ObjectReader;
import com.fasterxml.jackson.databind.deser.DeserializationProblemHandler;
import com.fasterxml.jackson.databind.exc.MismatchedInputException;
import com.fasterxml.jackson.databind.exc.ValueInstantiationException;
import dev.troupe.protocol.Json;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpEntities;
import org.apache.pekko.http.javadsl.model.HttpEntity;
import org.apache.pekko.http.javadsl.model.HttpResponse;
import org.apache.pekko.http.javadsl.model.MediaTypes;
import org.apache.pekko.http.javadsl.model.StatusCode;
import org.apache.pekko.http.javadsl.model.StatusCodes;
import org.apache.pekko.http.javadsl.server.Route;
import org.apache.pekko.util.ByteString;
import scala.concurrent.duration.FiniteDuration;

/**
 * JSON in and out of routes, always through {@link Json#mapper()}. Bodies are read strictly (the
 * size limit set by {@link ApiRoutes} applies) and parsed here so that every parse failure becomes
 * an error naming the field: {@link ApiException} (400, OpenAI body) via {@link #entity}, or {@link
 * ValidationException} (422, FastAPI body) via {@link #entityOrDetail}.
 */
public final class JsonBodies {
  private static final org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(JsonBodies.class);
  private static final FiniteDuration READ_TIMEOUT = FiniteDuration.create(60, TimeUnit.SECONDS);
  private static final String JSON_ONLY =
      "Unsupported Media Type: Only 'application/json' is allowed";

  private JsonBodies() {}

  /** A 200 JSON response of {@code value}. */
  public static Route completeJson(Object value) {
    return complete(response(StatusCodes.OK, value));
  }

  /** A JSON response of {@code value} with {@code status}. */
  public static HttpResponse response(StatusCode status, Object value) {
    return HttpResponse.create().withStatus(status).withEntity(entityOf(value));
  }

  /** {@code value} as an {@code application/json} entity. */
  public static HttpEntity.Strict entityOf(Object value) {
    return HttpEntities.create(ContentTypes.APPLICATION_JSON, bytes(value));
  }

  /** {@code value} serialized with the shared mapper. */
  public static byte[] bytes(Object value) {
    try {
      return Json.mapper().writeValueAsBytes(value);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException("cannot serialize " + value.getClass().getName(), e);
    }
  }

  /** Reads the body as {@code type}; failures are 400 OpenAI errors naming the field. */
  public static <T> Route entity(Class<T> type, Function<T, Route> inner) {
    return strictBody(bytes -> inner.apply(parse(bytes, type)), false);
  }

  /** Reads the body as {@code type}; failures are 422 FastAPI {@code detail} errors. */
  public static <T> Route entityOrDetail(Class<T> type, Function<T, Route> inner) {
    return strictBody(bytes -> inner.apply(parseOrDetail(bytes, type)), true);
  }

  private static Route strictBody(Function<ByteString, Route> inner, boolean detailStyle) {
    return extractRequest(
        request -> {
          var mediaType = request.entity().getContentType().mediaType();
          if (!mediaType.equals(MediaTypes.APPLICATION_JSON)) {
            if (detailStyle)
              throw ValidationException.of(List.of("body"), JSON_ONLY, "model_attributes_type");
            throw ApiException.badRequest(JSON_ONLY, null);
          }
          // Long.MAX_VALUE: the limit that applies is the entity's own, set by withSizeLimit.
          return extractStrictEntity(
              READ_TIMEOUT, Long.MAX_VALUE, strict -> inner.apply(strict.getData()));
        });
  }

  /** The shared mapper's strict reading (see {@link Json}), naming ignored fields at DEBUG. */
  private static ObjectReader reader(Class<?> type) {
    return Json.mapper().readerFor(type).withHandler(LOG_UNKNOWN);
  }

  /** Unknown fields are ignored, as in vLLM, and named at DEBUG. */
  private static final DeserializationProblemHandler LOG_UNKNOWN =
      new DeserializationProblemHandler() {
        @Override
        public boolean handleUnknownProperty(
            DeserializationContext ctxt,
            JsonParser p,
            JsonDeserializer<?> deserializer,
            Object beanOrClass,
            String propertyName)
            throws IOException {
          if (log.isDebugEnabled())
            log.debug(
                "Ignoring unknown field '{}' of {}",
                propertyName,
                beanOrClass instanceof Class<?> c
                    ? c.getSimpleName()
                    : beanOrClass.getClass().getSimpleName());
          p.skipChildren();
          return true;
        }
      };

  /** Parses {@code bytes} as {@code type}; any failure is a 400 naming the field. */
  public static <T> T parse(ByteString bytes, Class<T> type) {
    T value;
    byte[] body = bytes.toArray();
    long invalid = Utf8.firstInvalidByte(body);
    if (invalid >= 0)
      throw ApiException.badRequest(
          "Malformed JSON in the request body: not valid UTF-8 at byte " + invalid + ".", null);
    try {
      value = reader(type).readValue(body);
    } catch (IOException e) {
      throw toApiException(e);
    }
    // A body of JSON null reads as null: it is not the object every endpoint expects.
    if (value == null) throw ApiException.badRequest(NOT_AN_OBJECT, null);
    return value;
  }

  private static final String NOT_AN_OBJECT = "The request body must be a JSON object.";

  /** Parses {@code bytes} as {@code type}; any failure is a 422 with FastAPI's detail list. */
  public static <T> T parseOrDetail(ByteString bytes, Class<T> type) {
    byte[] body = bytes.toArray();
    long invalid = Utf8.firstInvalidByte(body);
    if (invalid >= 0)
      throw ValidationException.of(List.of("body", invalid), "JSON decode error", "json_invalid");
    try {
      T value = reader(type).readValue(body);
      if (value == null)
        throw ValidationException.of(
            List.of("body"), "Input should be a valid dictionary", "model_attributes_type");
      return value;
    } catch (IOException e) {
      Failure f = describe(e);
      List<Object> loc = new ArrayList<>();
      loc.add("body");
      loc.addAll(f.loc());
      throw ValidationException.of(loc, f.message(), f.kind());
    }
  }

  /** The OpenAI-style 400 for a JSON parse failure. */
  public static ApiException toApiException(IOException e) {
    Failure f = describe(e);
    return ApiException.badRequest(f.message(), f.param());
  }

  /** A parse failure in neutral terms: where, what, and a FastAPI-like kind. */
  record Failure(List<Object> loc, String message, String kind) {
    /** {@code a.b[2].c}, or null at the top level. */
    String param() {
      if (loc.isEmpty()) return null;
      StringBuilder sb = new StringBuilder();
      for (Object part : loc) {
        if (part instanceof Integer i) sb.append('[').append(i).append(']');
        else {
          if (sb.length() > 0) sb.append('.');
          sb.append(part);
        }
      }
      return sb.toString();
    }
  }

  static Failure describe(IOException e) {
    List<Object> loc = new ArrayList<>();
    if (e instanceof JsonMappingException jme) {
      for (JsonMappingException.Reference ref : jme.getPath()) {
        if (ref.getFieldName() != null) loc.add(ref.getFieldName());
        else if (ref.getIndex() >= 0) loc.add(ref.getIndex());
      }
    }
    String where =
        loc.isEmpty() ? "the request body" : "`" + new Failure(loc, "", "").param() + "`";
    if (e instanceof ValueInstantiationException vie && vie.getCause() != null) {
      // A record's compact constructor refused the value: its message is the useful part.
      return new Failure(
          loc, "Invalid value for " + where + ": " + vie.getCause().getMessage(), "value_error");
    }
    if (e instanceof MismatchedInputException mie) {
      if (loc.isEmpty() && mie.getMessage() != null && mie.getMessage().startsWith("No content"))
        return new Failure(loc, "The request body must be a JSON object, got nothing.", "missing");
      String expected =
          mie.getTargetType() == null ? "a different type" : describeType(mie.getTargetType());
      if (loc.isEmpty()) return new Failure(loc, NOT_AN_OBJECT, "model_attributes_type");
      return new Failure(
          loc, "Invalid type for " + where + ": expected " + expected + ".", "type_error");
    }
    if (e instanceof InputCoercionException) {
      return new Failure(
          loc, "Invalid value for " + where + ": number out of range.", "value_error");
    }
    if (e instanceof StreamReadException sre) {
      String msg = readable(sre.getOriginalMessage());
      return new Failure(loc, "Malformed JSON in the request body: " + msg, "json_invalid");
    }
    if (e instanceof JsonMappingException jme) {
      return new Failure(
          loc,
          "Invalid value for " + where + ": " + readable(jme.getOriginalMessage()),
          "value_error");
    }
    return new Failure(loc, "Cannot read the request body: " + e.getMessage(), "json_invalid");
  }

  /**
   * Jackson's own location inside a message ("start marker at [Source: REDACTED
   * (`StreamReadFeature.INCLUDE_SOURCE_IN_LOCATION` disabled); line: 1, column: 11]") as a client
   * reads it ("start marker at line 1, column 11"): the source is never echoed, and the feature
   * that keeps it out is the server's business.
   */
  static String readable(String message) {
    if (message == null) return "";
    return SOURCE_LOCATION.matcher(message).replaceAll("line $1, column $2");
  }

  private static final java.util.regex.Pattern SOURCE_LOCATION =
      java.util.regex.Pattern.compile("\\[Source: .*?; line: (-?\\d+), column: (-?\\d+)]");

  private static String describeType(Class<?> t) {
    if (t == Boolean.class || t == boolean.class) return "a boolean";
    if (t == Integer.class
        || t == int.class
        || t == Long.class
        || t == long.class
        || t == java.math.BigInteger.class) return "an integer";
    if (t == Double.class
        || t == double.class
        || t == Float.class
        || t == float.class
        || t == java.math.BigDecimal.class) return "a number";
    if (t == String.class) return "a string";
    if (List.class.isAssignableFrom(t) || t.isArray()) return "an array";
    return "an object";
  }
}
