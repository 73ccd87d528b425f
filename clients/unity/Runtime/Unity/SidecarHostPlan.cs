// What SidecarHost decides, without Unity: where the executable, config and state
// folder are, which environment the sidecar gets, its argument list, and how it is
// stopped. SidecarHost (a MonoBehaviour, only compile-checked) fills a plan from its
// Inspector fields and Application paths; the xunit suite tests the plan itself
// (HostPlanTests), on real folders and a real sidecar.
#nullable enable
using System;
using System.Collections.Generic;
using System.IO;
using System.Threading.Tasks;
using GameSidecar.Client;

namespace GameSidecar.Unity
{
    /// <summary>The sidecar's --log-level; <see cref="Default"/> passes none (the sidecar's own default, info).</summary>
    public enum SidecarLogLevel
    {
        /// <summary>No --log-level argument.</summary>
        Default,
        /// <summary>--log-level debug.</summary>
        Debug,
        /// <summary>--log-level info.</summary>
        Info,
        /// <summary>--log-level warning.</summary>
        Warning,
        /// <summary>--log-level error.</summary>
        Error,
    }

    /// <summary>One environment variable for the sidecar (a provider API key, a proxy setting), as the Inspector shows it.</summary>
    [Serializable]
    public sealed class EnvironmentVariable
    {
        /// <summary>The variable's name, e.g. OPENAI_API_KEY.</summary>
        public string name = "";
        /// <summary>Its value. Whatever is typed here is saved in the scene and ships in the build: set secrets from code.</summary>
        public string value = "";

        /// <summary>An empty variable (the Inspector's new row).</summary>
        public EnvironmentVariable() { }

        /// <summary>A variable <paramref name="name"/> = <paramref name="value"/>.</summary>
        public EnvironmentVariable(string name, string value)
        {
            this.name = name;
            this.value = value;
        }
    }

    /// <summary>
    /// SidecarHost's launch decisions, free of Unity: fill it in and call <see cref="ToOptions"/>.
    /// </summary>
    public sealed class SidecarHostPlan
    {
        /// <summary>The folder a default state folder goes in (<see cref="DefaultStateFolderName"/> under persistentDataPath).</summary>
        public const string DefaultStateFolderName = "game-sidecar";

        /// <summary>The most the host blocks the main thread on application quit: the sidecar's 1 s to exit on
        /// stdin EOF, the SIGTERM's 0.5 s, and a margin. A sidecar not gone by then still exits on its own when
        /// the game process ends (its stdin pipe closes; docs/unity.md section 5).</summary>
        public static readonly TimeSpan QuitWait = TimeSpan.FromSeconds(2);

        /// <summary>Variables the launch sets itself; a value given for one is dropped with a warning.</summary>
        public static readonly IReadOnlyList<string> Reserved = new[] { SidecarProcess.TokenEnv, SidecarProcess.MagicEnv };

        /// <summary>Application.streamingAssetsPath: where the frozen sidecar and a relative config are.</summary>
        public string StreamingAssetsPath { get; set; } = "";
        /// <summary>Application.persistentDataPath: where a default or relative state folder goes.</summary>
        public string PersistentDataPath { get; set; } = "";
        /// <summary>True on a Windows player or Editor: the executable has ".exe" and the sidecar listens on TCP.</summary>
        public bool IsWindows { get; set; }

        /// <summary>The sidecar executable; empty = StreamingAssets/game-sidecar/game-sidecar[.exe] (the frozen build).</summary>
        public string ExecutablePath { get; set; } = "";
        /// <summary>Optional sidecar.toml; a relative path is under StreamingAssets.</summary>
        public string ConfigPath { get; set; } = "";
        /// <summary>Keep sessions on disk (--state-dir) so they survive a crash or restart of the sidecar.</summary>
        public bool PersistState { get; set; } = true;
        /// <summary>The state folder: empty = persistentDataPath/game-sidecar; a relative path is under
        /// persistentDataPath (never the working directory, which a player does not control); absolute as given.</summary>
        public string StateDirectory { get; set; } = "";
        /// <summary>Listen on TCP loopback instead of a Unix socket (always on Windows).</summary>
        public bool ListenTcp { get; set; }
        /// <summary>The sidecar's --log-level.</summary>
        public SidecarLogLevel LogLevel { get; set; }
        /// <summary>Arguments added after the ones the plan makes (empty entries are skipped).</summary>
        public IList<string> ExtraArguments { get; set; } = new List<string>();
        /// <summary>Environment variables from the Inspector, in order (a later one with the same name wins).</summary>
        public IList<EnvironmentVariable> Environment { get; set; } = new List<EnvironmentVariable>();
        /// <summary>Code's say on the environment, called after the Inspector's list is merged: add API keys read
        /// from a safe place, override or remove entries. Reserved names are still dropped afterwards.</summary>
        public Action<IDictionary<string, string>>? ConfigureEnvironment { get; set; }

        /// <summary>The executable to launch.</summary>
        public string Executable() =>
            string.IsNullOrEmpty(ExecutablePath)
                ? Path.Combine(StreamingAssetsPath, "game-sidecar", IsWindows ? "game-sidecar.exe" : "game-sidecar")
                : ExecutablePath;

        /// <summary>The --state-dir folder, or null when <see cref="PersistState"/> is off.</summary>
        public string? StateFolder()
        {
            if (!PersistState) return null;
            if (string.IsNullOrEmpty(StateDirectory)) return Path.Combine(PersistentDataPath, DefaultStateFolderName);
            return Path.IsPathRooted(StateDirectory) ? StateDirectory : Path.GetFullPath(Path.Combine(PersistentDataPath, StateDirectory));
        }

        /// <summary>The --config file, or null when none is set.</summary>
        public string? ConfigFile() =>
            string.IsNullOrEmpty(ConfigPath) ? null
            : Path.IsPathRooted(ConfigPath) ? ConfigPath : Path.Combine(StreamingAssetsPath, ConfigPath);

        /// <summary>The sidecar's arguments: serve, --listen (TCP), --config, --state-dir, --log-level, then the extra ones.</summary>
        public List<string> Arguments()
        {
            var args = new List<string> { "serve" };
            if (ListenTcp || IsWindows) args.AddRange(new[] { "--listen", "tcp://127.0.0.1:0" });
            var config = ConfigFile();
            if (config != null) args.AddRange(new[] { "--config", config });
            var state = StateFolder();
            if (state != null) args.AddRange(new[] { "--state-dir", state });
            if (LogLevel != SidecarLogLevel.Default) args.AddRange(new[] { "--log-level", LogLevel.ToString().ToLowerInvariant() });
            foreach (var extra in ExtraArguments)
                if (!string.IsNullOrEmpty(extra)) args.Add(extra);
            return args;
        }

        /// <summary>The environment added to the game's own: the Inspector's list, then <see cref="ConfigureEnvironment"/>.
        /// Each entry skipped (no name, a reserved name) or overridden adds a line to <paramref name="warnings"/>.</summary>
        public Dictionary<string, string> MergedEnvironment(List<string> warnings)
        {
            var env = new Dictionary<string, string>(StringComparer.Ordinal);
            foreach (var variable in Environment)
            {
                if (variable == null) continue;
                var name = (variable.name ?? "").Trim();
                if (name.Length == 0)
                {
                    if (!string.IsNullOrEmpty(variable.value)) warnings.Add("an environment variable with a value but no name was skipped");
                    continue;
                }
                if (env.ContainsKey(name)) warnings.Add($"environment variable {name} is set twice; the later value is used");
                env[name] = variable.value ?? "";
            }
            ConfigureEnvironment?.Invoke(env);
            foreach (var reserved in Reserved)
            {
                if (env.Remove(reserved)) warnings.Add($"environment variable {reserved} is set by the launch itself; the value given was dropped");
            }
            return env;
        }

        /// <summary>The launch options for this plan; <paramref name="warnings"/> gets what the host should log.</summary>
        public SidecarProcessOptions ToOptions(List<string> warnings) => new SidecarProcessOptions
        {
            Executable = Executable(),
            Arguments = Arguments(),
            Environment = MergedEnvironment(warnings),
        };

        /// <summary>
        /// Stops <paramref name="process"/> without blocking the caller (the main thread): the whole stop (stdin
        /// closed, up to ExitGrace for the sidecar to exit, then SIGTERM, then SIGKILL) runs on the thread pool.
        /// The returned task ends with how the process ended; a failure of the stop is in the task, never thrown here.
        /// </summary>
        public static Task<SidecarExit> StopInBackground(SidecarProcess process) => Task.Run(() => process.StopAsync());

        /// <summary>
        /// The stop for application quit, when nothing runs after the caller returns: starts the stop as
        /// <see cref="StopInBackground"/> does, then waits at most <paramref name="wait"/> (default
        /// <see cref="QuitWait"/>). True when the sidecar was gone within the wait.
        /// </summary>
        public static bool StopBounded(SidecarProcess process, TimeSpan? wait = null)
        {
            var stop = StopInBackground(process);
            try
            {
                return stop.Wait(wait ?? QuitWait);
            }
            catch (AggregateException)
            {
                return true; // the stop failed, but it is over: nothing more to wait for
            }
        }
    }
}
