package dev.troupe.gateway.preview;

import static org.apache.pekko.http.javadsl.server.Directives.parameterOptional;

import java.util.List;
import java.util.Optional;
import java.util.function.Function;
import org.apache.pekko.http.javadsl.server.Route;

/**
 * The raw {@code after}, {@code limit} and (where the list has one) {@code order} query of a
 * cursor-paged preview list. The directives only extract (they never reject); the route validates
 * after its path id, so a bad id stays 404 whatever the query says, with FastAPI's 422 wording.
 */
public final class PageQuery {
  /** The W&B OpenAPI's {@code limit} bounds and default. */
  static final int DEFAULT_LIMIT = 20;

  static final int MAX_LIMIT = 100;

  private final Optional<String> after;
  private final Optional<String> limit;
  private final Optional<String> order;
  private final Optional<String> status;

  private PageQuery(Optional<String> after, Optional<String> limit, Optional<String> order) {
    this(after, limit, order, Optional.empty());
  }

  private PageQuery(
      Optional<String> after,
      Optional<String> limit,
      Optional<String> order,
      Optional<String> status) {
    this.after = after;
    this.limit = limit;
    this.order = order;
    this.status = status;
  }

  /** Extracts {@code after}, {@code limit}, {@code order} and {@code status} (a filter). */
  public static Route afterLimitOrderStatus(Function<PageQuery, Route> inner) {
    return afterLimitOrder(
        q ->
            parameterOptional(
                "status", status -> inner.apply(new PageQuery(q.after, q.limit, q.order, status))));
  }

  /**
   * {@code limit}, {@code order} and {@code status} checked together (one 422 listing every
   * problem); {@code status} must be one of {@code statuses} when given.
   */
  public Checked checked(List<String> statuses) {
    Problems p = new Problems();
    int l = limit(p);
    boolean desc = descending(p);
    String s = status.orElse(null);
    if (s != null && !statuses.contains(s))
      p.add(List.of("query", "status"), "Input should be " + choices(statuses), "enum");
    p.throwIfAny();
    return new Checked(l, desc, s);
  }

  /** A checked query: the page size, the order and the status filter (null: any). */
  public record Checked(int limit, boolean descending, String status) {}

  /** Pydantic's wording of an enum's values: {@code 'a', 'b' or 'c'}. */
  private static String choices(List<String> values) {
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < values.size(); i++) {
      if (i > 0) b.append(i == values.size() - 1 ? " or " : ", ");
      b.append('\'').append(values.get(i)).append('\'');
    }
    return b.toString();
  }

  /** Extracts {@code after} and {@code limit}. */
  public static Route afterLimit(Function<PageQuery, Route> inner) {
    return parameterOptional(
        "after",
        after ->
            parameterOptional(
                "limit", limit -> inner.apply(new PageQuery(after, limit, Optional.empty()))));
  }

  /** Extracts {@code after}, {@code limit} and {@code order}. */
  public static Route afterLimitOrder(Function<PageQuery, Route> inner) {
    return parameterOptional(
        "after",
        after ->
            parameterOptional(
                "limit",
                limit ->
                    parameterOptional(
                        "order", order -> inner.apply(new PageQuery(after, limit, order)))));
  }

  /** The raw cursor, if any. */
  public Optional<String> after() {
    return after;
  }

  /** The cursor, or null for "from the first". */
  public String afterOrNull() {
    return after.orElse(null);
  }

  /** The validated {@code limit}; 422 when it is not an integer in 1..100. */
  public int limit() {
    Problems p = new Problems();
    int v = limit(p);
    p.throwIfAny();
    return v;
  }

  /** {@code limit} in 1..100 (default 20); problems are added to {@code p}. */
  int limit(Problems p) {
    if (limit.isEmpty()) return DEFAULT_LIMIT;
    int v;
    try {
      v = Integer.parseInt(limit.get().trim());
    } catch (NumberFormatException e) {
      p.add(
          List.of("query", "limit"),
          "Input should be a valid integer, unable to parse string as an integer",
          "int_parsing");
      return DEFAULT_LIMIT;
    }
    if (v < 1)
      p.add(
          List.of("query", "limit"),
          "Input should be greater than or equal to 1",
          "greater_than_equal");
    if (v > MAX_LIMIT)
      p.add(
          List.of("query", "limit"),
          "Input should be less than or equal to " + MAX_LIMIT,
          "less_than_equal");
    return v;
  }

  /** Whether {@code order=desc} (default {@code asc}); any other value adds a problem to p. */
  boolean descending(Problems p) {
    String o = order.orElse("asc");
    if (!o.equals("asc") && !o.equals("desc"))
      p.add(List.of("query", "order"), "Input should be 'asc' or 'desc'", "enum");
    return o.equals("desc");
  }
}
