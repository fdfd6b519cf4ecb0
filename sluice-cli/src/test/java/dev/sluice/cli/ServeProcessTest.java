package dev.sluice.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code sluice serve} as its own process: signals, exit status, logs, heap. */
class ServeProcessTest {
  @TempDir
  Path dir;

  private static ProcessBuilder sluice(String... args) {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add("dev.sluice.cli.Main");
    cmd.addAll(List.of(args));
    return new ProcessBuilder(cmd);
  }

  /**
   * A database that cannot be reached at startup is one line naming it, without its password,
   * and exit status 1: never the connection pool's stack trace.
   */
  @Test
  void anUnreachableDatabase_isOneLine_withoutItsPassword() throws Exception {
    for (String[] store : new String[][] {
        {"--postgres", "jdbc:postgresql://127.0.0.1:1/x?user=u&password=secret", "PostgreSQL"},
        {"--mysql", "jdbc:mysql://u:secret@127.0.0.1:1/x", "MySQL"}}) {
      Process p = sluice("serve", "--port", "0", store[0], store[1]).redirectErrorStream(true)
          .start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
      assertThat(p.exitValue()).as(out).isEqualTo(1);
      assertThat(out).as(store[2]).contains("sluice serve: cannot connect to " + store[2] + " at ")
          .contains("***").doesNotContain("secret").doesNotContain("\tat ");
    }
  }

  /**
   * Regression (issue 11, defect 7): after SIGTERM the exit status was 143; the docs promise 0
   * after a clean shutdown. Also: every log line, Sluice's and Jetty's, has the one format, and
   * the startup hint names a policy that exists (defect 12).
   */
  @Test
  void sigterm_shutsDownCleanly_withExitStatus0_andOneLogFormat() throws Exception {
    Path config = dir.resolve("p.yaml");
    Files.writeString(config, "policies:\n  only: {algorithm: leaky-bucket, capacity: 1, rate: 1/1h}\n");
    ProcessBuilder pb = sluice("serve", "--port", "0", "--config", config.toString());
    pb.environment().put("SLUICE_LOG_LEVEL", "info");
    pb.redirectErrorStream(true);
    Process p = pb.start();
    List<String> lines = java.util.Collections.synchronizedList(new ArrayList<>());
    java.util.concurrent.CompletableFuture<Integer> port = new java.util.concurrent.CompletableFuture<>();
    Thread reader = new Thread(() -> {
      try (BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(),
          StandardCharsets.UTF_8))) {
        for (String line = out.readLine(); line != null; line = out.readLine()) {
          lines.add(line);
          Matcher m = Pattern.compile("listening on http://127\\.0\\.0\\.1:(\\d+)").matcher(line);
          if (m.find()) {
            port.complete(Integer.parseInt(m.group(1)));
          }
        }
      } catch (java.io.IOException e) {
        port.completeExceptionally(e);
      }
      port.complete(-1);
    });
    reader.start();
    int listening = port.get(60, TimeUnit.SECONDS);
    assertThat(listening).as("started: %s", lines).isPositive();
    HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
            URI.create("http://127.0.0.1:" + listening + "/v1/check"))
        .POST(HttpRequest.BodyPublishers.ofString("{\"policy\":\"only\",\"key\":\"a\"}")).build(),
        HttpResponse.BodyHandlers.ofString());
    assertThat(r.statusCode()).isEqualTo(200);
    p.destroy();   // SIGTERM
    assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
    reader.join(10_000);
    assertThat(p.exitValue()).as("exit status after SIGTERM; output: %s", lines).isZero();
    assertThat(lines).anySatisfy(l -> assertThat(l).startsWith("try:").contains("\"policy\":\"only\""));
    List<String> logs = List.copyOf(lines).stream().filter(l -> !l.startsWith("sluice: listening")
        && !l.startsWith("try:") && !l.startsWith("\tat ") && !l.isBlank()).toList();
    assertThat(logs).as("Jetty's own lines come through the one backend")
        .anySatisfy(l -> assertThat(l).contains(" org.eclipse.jetty."));
    assertThat(logs).allSatisfy(l -> assertThat(l).matches(Logs.LINE));
  }

  /** A heap too small for the policies' keys is a configuration error (exit 2), not an OOM later. */
  @Test
  void heapTooSmallForMaximumKeys_exits2_andSaysHowMuchIsNeeded() throws Exception {
    List<String> cmd = new ArrayList<>(sluice("serve", "--port", "0", "--maximum-keys", "10000000").command());
    cmd.add(1, "-Xmx96m");
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
    assertThat(p.exitValue()).as(output).isEqualTo(2);
    assertThat(output).contains("MiB of heap but this JVM has").contains("maximumKeys");
  }
}
