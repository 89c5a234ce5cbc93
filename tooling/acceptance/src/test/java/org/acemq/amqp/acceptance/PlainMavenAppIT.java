package org.acemq.amqp.acceptance;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.acemq.amqp.store.redis.RedisServers;
import org.acemq.amqp.testsupport.AmqpTestClient;
import org.acemq.amqp.testsupport.EmbeddedArtemis;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;

/**
 * An application as a user sets it up: a plain Maven project (no parent of ours) whose dependency management and
 * dependencies are the README's blocks as they stand, the BOM import with the runtime (and what else that block
 * lists), and the Redis store's block, declared before the runtime or after everything. Maven resolves it against a
 * private local repository under {@code target/} into which this test installs the project's packaged artifacts
 * (never {@code ~/.m2}); third-party artifacts come from the build's own local repository, read as a remote one, and
 * Maven Central after it. The application ({@code plain-maven-app/PlainApp.java}) is compiled by that build and run
 * on its runtime class path in a JVM of its own: it consumes a queue of an embedded Artemis broker (in this JVM)
 * through the Redis store on a real Redis (private {@code redis-server} as the store's own tests start it).
 *
 * <p>Asserted for each order: one Netty version on the application's class path (and on its test class path, with
 * acemq-test-support), the BOM's; the application ran each message once and absorbed the copies; every record in
 * Redis is confirmed; the queue is empty.
 */
@Timeout(value = 15, unit = TimeUnit.MINUTES)
class PlainMavenAppIT {

    private static final int DISTINCT = 200;
    private static final int COPIES = 50;
    private static final Pattern NETTY_JAR = Pattern.compile("[/\\\\]io[/\\\\]netty[/\\\\]([^/\\\\]+)[/\\\\]([^/\\\\]+)[/\\\\][^/\\\\]+\\.jar$");

    enum Order { STORE_FIRST, RUNTIME_FIRST }

    private static Path work;
    private static Path settings;
    private static EmbeddedArtemis broker;
    private static RedisClient redis;
    private static StatefulRedisConnection<String, String> redisConnection;

    @BeforeAll
    static void installArtifactsAndStartServers() throws IOException {
        work = Project.unpublishedModule("acemq-acceptance").resolve("target/plain-maven-app");
        Path repository = work.resolve("repository");
        deleteOurArtifacts(repository);
        installProjectArtifacts(repository);
        settings = work.resolve("settings.xml");
        Files.writeString(settings, settingsXml(repository, Path.of(required("acemq.outer.repository"))));
        broker = EmbeddedArtemis.startDefault();
        redis = RedisClient.create(RedisServers.standalone());
        redisConnection = redis.connect();
    }

    @AfterAll
    static void stop() {
        if (redisConnection != null) {
            redisConnection.close();
        }
        if (redis != null) {
            redis.shutdown();
        }
        if (broker != null) {
            broker.close();
        }
    }

    @ParameterizedTest
    @EnumSource(Order.class)
    void anApplicationFromTheReadmesBlocksConsumesThroughRedisOnOneNetty(Order order) throws Exception {
        Path app = work.resolve(order.name().toLowerCase(java.util.Locale.ROOT));
        Files.createDirectories(app.resolve("src/main/java"));
        try (InputStream source = PlainMavenAppIT.class.getResourceAsStream("/plain-maven-app/PlainApp.java")) {
            Files.copy(source, app.resolve("src/main/java/PlainApp.java"), StandardCopyOption.REPLACE_EXISTING);
        }
        Files.writeString(app.resolve("pom.xml"), pom(order));
        run(List.of(maven(), "-B", "-e", "-s", settings.toString(), "-f", app.resolve("pom.xml").toString(),
                "process-classes"), app, app.resolve("maven.log"), Limit.MAVEN);

        List<String> runtimeClassPath = classPath(app.resolve("target/runtime-classpath.txt"));
        List<String> testClassPath = classPath(app.resolve("target/test-classpath.txt"));
        String bomNetty = element(Project.read("bom/pom.xml"), "netty.version");
        Map<String, String> netty = nettyJars(runtimeClassPath);
        assertThat(netty).as("Netty on the application's class path").containsKeys("netty-codec-http",
                "netty-transport-native-epoll", "netty-codec-base", "netty-handler");
        assertThat(netty.values()).as("one Netty version on the class path: %s", netty).containsOnly(bomNetty);
        assertThat(nettyJars(testClassPath).values()).as("one Netty version on the test class path (with "
                + "acemq-test-support's broker)").containsOnly(bomNetty);
        assertThat(runtimeClassPath).filteredOn(entry -> entry.contains("/org/acemq/amqp/"))
                .as("the project's artifacts come from the private repository")
                .isNotEmpty().allMatch(entry -> entry.startsWith(work.resolve("repository").toString()));

        String queue = "plain-app-" + order.name().toLowerCase(java.util.Locale.ROOT) + "-" + UUID.randomUUID();
        String prefix = "plain-app-" + UUID.randomUUID() + ":";
        try (AmqpTestClient client = AmqpTestClient.connect(broker)) {
            client.sendBatch(queue, DISTINCT, i -> "m-" + i, i -> "body-" + i);
            client.sendBatch(queue, COPIES, i -> "m-" + i, i -> "body-" + i);
        }
        String classPath = app.resolve("target/classes") + File.pathSeparator + String.join(File.pathSeparator,
                runtimeClassPath);
        String output = run(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-cp",
                classPath, "PlainApp", broker.host(), Integer.toString(broker.port()), queue,
                Integer.toString(DISTINCT), Integer.toString(DISTINCT + COPIES), RedisServers.standalone().toURI()
                        .toString(), prefix), app, app.resolve("app.log"), Limit.APP);

        assertThat(output).contains("runs=" + DISTINCT + "\n", "distinct=" + DISTINCT + "\n",
                "processed=" + DISTINCT + "\n", "duplicates=" + COPIES + "\n");
        List<String> loaded = output.lines().filter(l -> l.startsWith("netty-loaded ")).toList();
        assertThat(loaded).as("Netty's own report of its jars").isNotEmpty()
                .allMatch(l -> l.endsWith(" " + bomNetty), "all " + bomNetty);
        List<String> records = redisConnection.sync().keys(prefix + "v2{*}*");
        assertThat(records).hasSize(DISTINCT);
        for (String key : records) {
            assertThat(redisConnection.sync().hget(key, "s")).as("confirmed: %s", key).isEqualTo("d");
        }
        assertThat(broker.messageCount(queue)).as("messages left on the queue").isZero();
    }

    // ------------------------------------------------------------------------------------------------------------

    /** How long each step may take, in seconds. */
    private enum Limit {
        MAVEN(300), APP(180);

        final int seconds;

        Limit(int seconds) {
            this.seconds = seconds;
        }
    }

    /** The README's blocks, as they stand, in a project of its own. */
    private static String pom(Order order) {
        List<Markdown.Block> xml = Markdown.blocks("README.md", Project.read("README.md")).stream()
                .filter(b -> b.language().equals("xml")).toList();
        String main = xml.stream().filter(b -> b.text().contains("<artifactId>acemq-bom</artifactId>")
                && b.text().contains("<artifactId>acemq-consumer-runtime</artifactId>")).findFirst()
                .orElseThrow(() -> new AssertionError("README.md has no xml block with the BOM and the runtime"))
                .text();
        String redisBlock = xml.stream().filter(b -> b.text().strip().startsWith("<dependency>")
                && b.text().contains("<artifactId>acemq-idempotency-redis</artifactId>")
                && b.text().indexOf("<dependency>") == b.text().lastIndexOf("<dependency>")).findFirst()
                .orElseThrow(() -> new AssertionError("README.md has no xml block of the Redis store's dependency"))
                .text();
        String management = main.substring(main.indexOf("<dependencyManagement>"),
                main.indexOf("</dependencyManagement>") + "</dependencyManagement>".length());
        String rest = main.substring(main.indexOf("</dependencyManagement>"));
        String dependencies = rest.substring(rest.indexOf("<dependencies>") + "<dependencies>".length(),
                rest.indexOf("</dependencies>"));
        String declared = order == Order.STORE_FIRST ? redisBlock + dependencies : dependencies + redisBlock;
        return """
                <?xml version="1.0" encoding="UTF-8"?>
                <project xmlns="http://maven.apache.org/POM/4.0.0"
                         xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
                         xsi:schemaLocation="http://maven.apache.org/POM/4.0.0 https://maven.apache.org/xsd/maven-4.0.0.xsd">
                  <modelVersion>4.0.0</modelVersion>
                  <groupId>com.example</groupId>
                  <artifactId>plain-app</artifactId>
                  <version>1</version>
                  <properties>
                    <maven.compiler.release>17</maven.compiler.release>
                    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
                  </properties>
                """ + management + "\n<dependencies>\n" + declared + "</dependencies>\n" + """
                  <build>
                    <plugins>
                      <plugin>
                        <groupId>org.apache.maven.plugins</groupId>
                        <artifactId>maven-resources-plugin</artifactId>
                        <version>%s</version>
                      </plugin>
                      <plugin>
                        <groupId>org.apache.maven.plugins</groupId>
                        <artifactId>maven-compiler-plugin</artifactId>
                        <version>%s</version>
                      </plugin>
                      <plugin>
                        <groupId>org.apache.maven.plugins</groupId>
                        <artifactId>maven-dependency-plugin</artifactId>
                        <version>%s</version>
                        <executions>
                          <execution>
                            <id>runtime-classpath</id>
                            <phase>process-classes</phase>
                            <goals><goal>build-classpath</goal></goals>
                            <configuration>
                              <includeScope>runtime</includeScope>
                              <outputFile>${project.build.directory}/runtime-classpath.txt</outputFile>
                            </configuration>
                          </execution>
                          <execution>
                            <id>test-classpath</id>
                            <phase>process-classes</phase>
                            <goals><goal>build-classpath</goal></goals>
                            <configuration>
                              <includeScope>test</includeScope>
                              <outputFile>${project.build.directory}/test-classpath.txt</outputFile>
                            </configuration>
                          </execution>
                        </executions>
                      </plugin>
                    </plugins>
                  </build>
                </project>
                """.formatted(required("acemq.plugin.resources"), required("acemq.plugin.compiler"),
                required("acemq.plugin.dependency"));
    }

    /** The private repository reads the build's own repository first, as a remote one (releases only), then Central. */
    private static String settingsXml(Path repository, Path outer) {
        String outerRepository = """
                  <id>acemq-build-local-repository</id>
                  <url>%s</url>
                  <releases><enabled>true</enabled></releases>
                  <snapshots><enabled>false</enabled></snapshots>
                """.formatted(outer.toUri());
        return """
                <settings>
                  <localRepository>%s</localRepository>
                  <profiles>
                    <profile>
                      <id>build-local-repository</id>
                      <repositories><repository>%s</repository></repositories>
                      <pluginRepositories><pluginRepository>%s</pluginRepository></pluginRepositories>
                    </profile>
                  </profiles>
                  <activeProfiles><activeProfile>build-local-repository</activeProfile></activeProfiles>
                </settings>
                """.formatted(repository, outerRepository, outerRepository);
    }

    /**
     * Installs what the build packaged, as {@code mvn install} lays it out: the parent POM and the BOM, and each
     * published jar module's POM and jar.
     */
    private static void installProjectArtifacts(Path repository) throws IOException {
        String version = Project.version();
        install(repository, "acemq-parent", version, Project.file("pom.xml"), null);
        for (Project.Module module : Project.publishedModules()) {
            Path pom = module.dir().resolve("pom.xml");
            if (!module.isJar()) {
                install(repository, module.artifactId(), version, pom, null);
                continue;
            }
            Path jar = module.dir().resolve("target").resolve(module.artifactId() + "-" + version + ".jar");
            assertThat(jar).as("the jar of %s (package the modules first: mvn -pl tooling/acceptance -am verify)",
                    module.artifactId()).isRegularFile();
            install(repository, module.artifactId(), version, pom, jar);
        }
    }

    private static void install(Path repository, String artifactId, String version, Path pom, Path jar)
            throws IOException {
        Path dir = repository.resolve("org/acemq/amqp").resolve(artifactId).resolve(version);
        Files.createDirectories(dir);
        Files.copy(pom, dir.resolve(artifactId + "-" + version + ".pom"), StandardCopyOption.REPLACE_EXISTING);
        if (jar != null) {
            Files.copy(jar, dir.resolve(artifactId + "-" + version + ".jar"), StandardCopyOption.REPLACE_EXISTING);
        }
    }

    /** Our artifacts from an earlier run go, so that nothing stale is resolved; third-party ones stay. */
    private static void deleteOurArtifacts(Path repository) throws IOException {
        Path ours = repository.resolve("org/acemq");
        if (Files.exists(ours)) {
            try (Stream<Path> files = Files.walk(ours)) {
                files.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
    }

    private static String maven() {
        String home = required("acemq.maven.home");
        Path mvn = Path.of(home, "bin", "mvn");
        assertThat(mvn).as("the Maven that runs this build").isExecutable();
        return mvn.toString();
    }

    /** Runs a command; fails with the end of its output unless it exits 0 in time. */
    private static String run(List<String> command, Path dir, Path log, Limit limit) throws Exception {
        Process process = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true)
                .redirectOutput(log.toFile()).start();
        boolean finished = process.waitFor(limit.seconds, TimeUnit.SECONDS);
        if (!finished) {
            process.destroyForcibly();
        }
        String output = Files.readString(log, StandardCharsets.UTF_8);
        assertThat(finished && process.exitValue() == 0)
                .as("%s %s (log %s):%n%s", finished ? "exit " + process.exitValue() : "no end within "
                        + limit.seconds + " s:", command.subList(0, Math.min(command.size(), 3)), log,
                        output.substring(Math.max(0, output.length() - 6000)))
                .isTrue();
        return output;
    }

    private static List<String> classPath(Path file) throws IOException {
        return List.of(Files.readString(file, StandardCharsets.UTF_8).strip().split(Pattern.quote(File.pathSeparator)));
    }

    /** @return artifactId to version of every Netty jar on the class path */
    private static Map<String, String> nettyJars(List<String> classPath) {
        Map<String, String> jars = new TreeMap<>();
        for (String entry : classPath) {
            Matcher m = NETTY_JAR.matcher(entry);
            if (m.find()) {
                String previous = jars.put(m.group(1), m.group(2));
                if (previous != null && !previous.equals(m.group(2))) {
                    jars.put(m.group(1), previous + "+" + m.group(2));
                }
            }
        }
        return jars;
    }

    private static String element(String xml, String name) {
        Matcher m = Pattern.compile("<" + Pattern.quote(name) + ">([^<]+)</" + Pattern.quote(name) + ">").matcher(xml);
        assertThat(m.find()).as("<%s> in the BOM", name).isTrue();
        return m.group(1).strip();
    }

    private static String required(String property) {
        String value = System.getProperty(property);
        if (value == null || value.isBlank() || value.startsWith("${")) {
            throw new IllegalStateException("system property " + property + " is not set (run through Maven: "
                    + "tooling/acceptance/pom.xml passes it)");
        }
        return value;
    }
}
