package dev.sluice.spring;

import dev.sluice.concurrency.Priority;
import dev.sluice.health.HealthShedder;
import dev.sluice.http.RateLimitHeaders;
import dev.sluice.http.RateLimitProblem;
import dev.sluice.servlet.ConcurrencyRule;
import dev.sluice.servlet.KeyResolver;
import dev.sluice.servlet.Keys;
import dev.sluice.servlet.Rule;
import dev.sluice.servlet.SluiceFilter;
import dev.sluice.webflux.SluiceWebFilter;
import dev.sluice.webflux.WebConcurrencyRule;
import dev.sluice.webflux.WebKeyResolver;
import dev.sluice.webflux.WebKeys;
import dev.sluice.webflux.WebRule;
import jakarta.servlet.Filter;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.condition.AnyNestedCondition;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.ConfigurationCondition;
import org.springframework.core.Ordered;
import org.springframework.core.annotation.Order;
import org.springframework.core.env.Environment;
import org.springframework.http.server.reactive.ServerHttpResponse;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.WebExceptionHandler;
import org.springframework.web.server.WebFilter;
import org.springframework.web.server.WebFilterChain;
import org.springframework.web.servlet.HandlerExceptionResolver;
import org.springframework.web.servlet.ModelAndView;
import reactor.core.publisher.Mono;

/**
 * The servlet filter or the WebFlux filter for {@code sluice.rules} and {@code
 * sluice.concurrency.rules} (one filter of both kinds of rule), and the 429 answers.
 */
final class SluiceWebConfigurations {
  /**
   * Actuator's endpoints on the application's port ({@code management.endpoints.web.base-path},
   * {@code /actuator} by default, and a slash): the health shedder counts them as critical, so
   * that a load balancer reading the health never sees a shed 503.
   */
  static String actuatorPath(Environment env) {
    String base = env.getProperty("management.endpoints.web.base-path", "/actuator");
    return base.endsWith("/") ? base : base + "/";
  }

  /** When there is a rate rule or a concurrency rule. */
  static final class AnyRules extends AnyNestedCondition {
    AnyRules() {
      super(ConfigurationCondition.ConfigurationPhase.REGISTER_BEAN);
    }

    @ConditionalOnProperty(prefix = "sluice.rules[0]", name = "path")
    static final class RateRules {}

    @ConditionalOnProperty(prefix = "sluice.concurrency.rules[0]", name = "path")
    static final class ConcurrencyRules {}

    @ConditionalOnProperty(prefix = "sluice.health.signals[0]", name = "signal")
    static final class HealthSignals {}
  }

  private SluiceWebConfigurations() {}

  /** Servlet applications (Spring MVC on Tomcat, Jetty, Undertow). */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
  @ConditionalOnClass({Filter.class, HandlerExceptionResolver.class})
  static class Servlet {
    /**
     * The filter, at {@code sluice.filter-order}, for every path: the rate rules, then the
     * concurrency rules (a request refused by its rate limit never takes a permit).
     */
    @Bean
    @Conditional(AnyRules.class)
    FilterRegistrationBean<SluiceFilter> sluiceFilter(SluiceLimiters limiters, SluiceProperties p,
        ObjectProvider<HealthShedder> health, Environment env) {
      SluiceSettings s = limiters.settings;
      SluiceFilter.Builder b = SluiceFilter.builder().headers(s.headers).onMissingKey(s.missingKey)
          .dryRun(p.isDryRun()).combineHeaders(p.isHeadersCombine());
      HealthShedder shedder = health.getIfAvailable();
      if (shedder != null) {
        String header = p.getHealth().getPriorityHeader();
        String actuator = actuatorPath(env);
        b.health(shedder, req -> req.getRequestURI().startsWith(actuator) ? Priority.CRITICAL
            : ConcurrencySettings.RuleSpec.priority(req.getHeader(header)));
      }
      for (SluiceSettings.RuleSpec r : s.rules) {
        Rule.Builder rule = Rule.path(r.path()).limiter(limiters.get(r.policy()))
            .key(servletKey(r.key(), p));
        if (!r.methods().isEmpty()) {
          rule.methods(r.methods().toArray(new String[0]));
        }
        SluiceSettings.CostSource cost = r.cost();
        rule.cost(cost.header() == null ? req -> cost.constant()
            : req -> cost.of(req.getHeader(cost.header())));
        if (r.queue()) {
          rule.queue();
        }
        b.rule(rule.build());
      }
      for (ConcurrencySettings.RuleSpec r : s.concurrency.rules) {
        ConcurrencyRule.Builder rule = ConcurrencyRule.path(r.path())
            .limiter(r.limit(), limiters.concurrency(r.limit())).maxWait(r.maxWait())
            .deadlineHeaders(r.deadlineHeaders().toArray(new String[0]))
            .retryAfter(r.retryAfter());
        if (!r.methods().isEmpty()) {
          rule.methods(r.methods().toArray(new String[0]));
        }
        switch (r.scope()) {
          case CLIENT -> rule.perClient(servletKey(r.key(), p));
          case ROUTE -> rule.perRoute();
          default -> rule.global();
        }
        String header = r.priorityHeader();
        if (header != null) {
          rule.priority(req -> ConcurrencySettings.RuleSpec.priority(req.getHeader(header)));
        }
        if (r.flow() != null) {
          rule.flow(servletKey(r.flow(), p));
        }
        b.rule(rule.build());
      }
      FilterRegistrationBean<SluiceFilter> reg = new FilterRegistrationBean<>(b.build());
      reg.setName("sluiceFilter");
      reg.setOrder(p.getFilterOrder());
      reg.addUrlPatterns("/*");
      return reg;
    }

    /**
     * Answers {@link RateLimitExceededException} (429 or 503) and
     * {@link ConcurrencyLimitExceededException} (503 or 429) from a handler.
     */
    @Bean
    HandlerExceptionResolver sluiceExceptionResolver(SluiceLimiters limiters) {
      RateLimitHeaders.Mode mode = limiters.settings.headers;
      return new OrderedResolver(mode);
    }

    private static KeyResolver servletKey(SluiceSettings.KeySource k, SluiceProperties p) {
      return switch (k.kind()) {
        case "principal" -> Keys.principal();
        case "header" -> Keys.header(k.header());
        default -> Keys.clientIp(p.getTrustedProxies(), p.getIpv6PrefixBits());
      };
    }
  }

  /** The MVC resolver of {@link RateLimitExceededException}, before every other. */
  static final class OrderedResolver implements HandlerExceptionResolver, Ordered {
    private final RateLimitHeaders.Mode mode;

    OrderedResolver(RateLimitHeaders.Mode mode) {
      this.mode = mode;
    }

    @Override
    public ModelAndView resolveException(HttpServletRequest request, HttpServletResponse response,
        Object handler, Exception ex) {
      if (ex instanceof ConcurrencyLimitExceededException c && !response.isCommitted()) {
        response.setHeader("Retry-After", "1");
        try {
          SluiceFilter.writeProblem(response, c.problem());
        } catch (IOException io) {
          return null;
        }
        return new ModelAndView();
      }
      if (!(ex instanceof RateLimitExceededException e) || response.isCommitted()) {
        return null;
      }
      RateLimitProblem.writeHeaders(e.decision(), mode, response::setHeader);
      try {
        SluiceFilter.writeProblem(response, e.problem());
      } catch (IOException io) {
        return null;
      }
      return new ModelAndView();
    }

    @Override
    public int getOrder() {
      return Ordered.HIGHEST_PRECEDENCE + 1;
    }
  }

  /** Reactive applications (Spring WebFlux on Netty). */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.REACTIVE)
  @ConditionalOnClass({WebFilter.class, Mono.class})
  static class Reactive {
    /**
     * The filter, at {@code sluice.filter-order}: the rate rules, then the concurrency rules.
     */
    @Bean
    @Conditional(AnyRules.class)
    OrderedWebFilter sluiceWebFilter(SluiceLimiters limiters, SluiceProperties p,
        ObjectProvider<HealthShedder> health, Environment env) {
      SluiceSettings s = limiters.settings;
      SluiceWebFilter.Builder b = SluiceWebFilter.builder().headers(s.headers)
          .onMissingKey(s.missingKey).dryRun(p.isDryRun()).combineHeaders(p.isHeadersCombine());
      HealthShedder shedder = health.getIfAvailable();
      if (shedder != null) {
        String header = p.getHealth().getPriorityHeader();
        String actuator = actuatorPath(env);
        b.health(shedder, req -> req.getPath().value().startsWith(actuator) ? Priority.CRITICAL
            : ConcurrencySettings.RuleSpec.priority(req.getHeaders().getFirst(header)));
      }
      for (SluiceSettings.RuleSpec r : s.rules) {
        WebRule.Builder rule = WebRule.path(r.path()).limiter(limiters.get(r.policy()))
            .key(webKey(r.key(), p));
        if (!r.methods().isEmpty()) {
          rule.methods(r.methods().toArray(new String[0]));
        }
        SluiceSettings.CostSource cost = r.cost();
        rule.cost(cost.header() == null ? req -> cost.constant()
            : req -> cost.of(req.getHeaders().getFirst(cost.header())));
        if (r.queue()) {
          rule.queue();
        }
        b.rule(rule.build());
      }
      for (ConcurrencySettings.RuleSpec r : s.concurrency.rules) {
        WebConcurrencyRule.Builder rule = WebConcurrencyRule.path(r.path())
            .limiter(r.limit(), limiters.concurrency(r.limit())).maxWait(r.maxWait())
            .deadlineHeaders(r.deadlineHeaders().toArray(new String[0]))
            .retryAfter(r.retryAfter());
        if (!r.methods().isEmpty()) {
          rule.methods(r.methods().toArray(new String[0]));
        }
        switch (r.scope()) {
          case CLIENT -> rule.perClient(webKey(r.key(), p));
          case ROUTE -> rule.perRoute();
          default -> rule.global();
        }
        String header = r.priorityHeader();
        if (header != null) {
          rule.priority(req -> ConcurrencySettings.RuleSpec.priority(
              req.getHeaders().getFirst(header)));
        }
        if (r.flow() != null) {
          rule.flow(webKey(r.flow(), p));
        }
        b.rule(rule.build());
      }
      return new OrderedWebFilter(b.build(), p.getFilterOrder());
    }

    /**
     * Answers {@link RateLimitExceededException} and {@link ConcurrencyLimitExceededException},
     * before Boot's handler.
     */
    @Bean
    @Order(-2)
    WebExceptionHandler sluiceWebExceptionHandler(SluiceLimiters limiters) {
      RateLimitHeaders.Mode mode = limiters.settings.headers;
      return (exchange, ex) -> {
        if (ex instanceof ConcurrencyLimitExceededException c
            && !exchange.getResponse().isCommitted()) {
          exchange.getResponse().getHeaders().set("Retry-After", "1");
          return SluiceWebFilter.writeProblem(exchange.getResponse(), c.problem());
        }
        if (!(ex instanceof RateLimitExceededException e) || exchange.getResponse().isCommitted()) {
          return Mono.error(ex);
        }
        ServerHttpResponse response = exchange.getResponse();
        RateLimitProblem.writeHeaders(e.decision(), mode, response.getHeaders()::set);
        return SluiceWebFilter.writeProblem(response, e.problem());
      };
    }

    private static WebKeyResolver webKey(SluiceSettings.KeySource k, SluiceProperties p) {
      return switch (k.kind()) {
        case "principal" -> WebKeys.principal();
        case "header" -> WebKeys.header(k.header());
        default -> WebKeys.clientIp(p.getTrustedProxies(), p.getIpv6PrefixBits());
      };
    }
  }

  /** The WebFlux filter with its order. */
  static final class OrderedWebFilter implements WebFilter, Ordered {
    private final WebFilter filter;
    private final int order;

    OrderedWebFilter(WebFilter filter, int order) {
      this.filter = filter;
      this.order = order;
    }

    @Override
    public Mono<Void> filter(ServerWebExchange exchange, WebFilterChain chain) {
      return filter.filter(exchange, chain);
    }

    @Override
    public int getOrder() {
      return order;
    }
  }
}
