package dev.sluice.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code @RateLimited(key = "#id")} in a class compiled without {@code -parameters}, as a module
 * built with the compiler's defaults is: refused at startup with what to do, where before every
 * caller silently shared one bucket (the name evaluated to null).
 */
class ParameterNamesTest {
  @TempDir
  Path dir;

  /** Compiles {@code source} as {@code gen.Reports}, with or without {@code -parameters}. */
  private Class<?> compile(String source, boolean parameters) throws Exception {
    Path src = dir.resolve("gen/Reports.java");
    Files.createDirectories(src.getParent());
    Files.writeString(src, source);
    Path out = dir.resolve(parameters ? "with" : "without");
    Files.createDirectories(out);
    JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
    List<String> args = new java.util.ArrayList<>(List.of("-g", "-d", out.toString(),
        "-cp", System.getProperty("java.class.path")));
    if (parameters) {
      args.add("-parameters");
    }
    args.add(src.toString());
    assertThat(javac.run(null, null, null, args.toArray(new String[0]))).isZero();
    URLClassLoader loader = new URLClassLoader(new URL[] {out.toUri().toURL()},
        getClass().getClassLoader());
    return loader.loadClass("gen.Reports");
  }

  private static final String SOURCE = String.join("\n",
      "package gen;",
      "import dev.sluice.spring.RateLimited;",
      "public class Reports {",
      "  @RateLimited(policy = \"reports\", key = \"#user\")",
      "  public String byName(String user) { return user; }",
      "  @RateLimited(policy = \"reports\", key = \"'u:' + #p0\", cost = \"#a1\")",
      "  public String byPosition(String user, int rows) { return user; }",
      "  @RateLimited(policy = \"reports\", key = \"#usr\")",
      "  public String typo(String user) { return user; }",
      "  @RateLimited(policy = \"reports\", key = \"#p3\")",
      "  public String tooFar(String user) { return user; }",
      "}", "");

  private static Method method(Class<?> c, String name) {
    for (Method m : c.getMethods()) {
      if (m.getName().equals(name)) {
        return m;
      }
    }
    throw new AssertionError(name);
  }

  private static void parse(Class<?> c, String name) {
    Method m = method(c, name);
    RateLimitedInterceptor.parse(m, m.getAnnotation(RateLimited.class), Set.of("reports"));
  }

  @Test
  void withoutParameters_aNamedParameter_isRefused_sayingWhatToDo() throws Exception {
    Class<?> c = compile(SOURCE, false);
    assertThatThrownBy(() -> parse(c, "byName"))
        .isInstanceOf(SluiceConfigurationException.class)
        .hasMessageContaining("@RateLimited on gen.Reports.byName: key '#user' names the"
            + " parameter #user, but the compiled class does not keep parameter names")
        .hasMessageContaining("compile with -parameters")
        .hasMessageContaining("#p0 or #a0");
    parse(c, "byPosition");   // positions need no names
    assertThatThrownBy(() -> parse(c, "tooFar"))
        .hasMessageContaining("key '#p3' uses #p3, but the method has 1 parameter(s)");
  }

  @Test
  void withParameters_namesWork_andATypoIsRefused() throws Exception {
    Class<?> c = compile(SOURCE, true);
    parse(c, "byName");
    parse(c, "byPosition");
    assertThatThrownBy(() -> parse(c, "typo"))
        .hasMessageContaining("key '#usr' names #usr, which is not a parameter of the method"
            + " (its parameters: [user])");
  }

  /** A WebFlux handler that would decide on the event loop. */
  @org.springframework.web.bind.annotation.RestController
  static class BlockingHandler {
    @org.springframework.web.bind.annotation.GetMapping("/x")
    @RateLimited(policy = "reports", key = "#p0")
    public String get(String user) {
      return user;
    }

    @org.springframework.web.bind.annotation.GetMapping("/y")
    @RateLimited(policy = "reports", key = "#p0")
    public reactor.core.publisher.Mono<String> reactive(String user) {
      return reactor.core.publisher.Mono.just(user);
    }
  }

  @Test
  void aWebFluxHandlerThatWouldBlockTheEventLoop_failsAtStartup() {
    org.springframework.boot.test.context.runner.ReactiveWebApplicationContextRunner runner =
        new org.springframework.boot.test.context.runner.ReactiveWebApplicationContextRunner()
            .withConfiguration(org.springframework.boot.autoconfigure.AutoConfigurations.of(
                SluiceAutoConfiguration.class))
            .withPropertyValues("sluice.store.type=redis",
                "sluice.store.redis.uri=" + TestStores.redisUri(),
                "sluice.policies.reports.algorithm=token-bucket",
                "sluice.policies.reports.capacity=4", "sluice.policies.reports.rate=1/1h")
            .withBean(BlockingHandler.class);
    runner.run(context -> {
      assertThat(context).hasFailed();
      Throwable root = context.getStartupFailure();
      while (!(root instanceof SluiceConfigurationException) && root.getCause() != null) {
        root = root.getCause();
      }
      assertThat(((SluiceConfigurationException) root).problems()).containsExactly(
          "@RateLimited on " + BlockingHandler.class.getName() + ".get: a WebFlux handler that"
              + " returns String runs on the event loop, and its decision on the redis store would"
              + " block it: return Mono or Flux (decided without blocking)");
    });
    runner.withPropertyValues("sluice.store.type=memory").run(context ->
        assertThat(context).as("in memory a decision never blocks").hasNotFailed());
  }
}
