// The Unity face of the sidecar: one host for the whole game. It survives scene loads
// (DontDestroyOnLoad; a second host is refused and destroys itself), launches the
// sidecar when enabled, stops it off the main thread when disabled and with a short
// bounded wait on quit, and hands run events, status and exits to the main thread
// (C# events and Inspector UnityEvents). Every decision it makes is in SidecarHostPlan,
// which the xunit suite tests; this stays a thin shell over it and GameSidecar.Client.
#nullable enable
using System;
using System.Collections.Generic;
using System.Net.Http;
using System.Runtime.InteropServices;
using System.Threading;
using System.Threading.Tasks;
using GameSidecar.Client;
using GameSidecar.V1;
using UnityEngine;
using UnityEngine.Events;

namespace GameSidecar.Unity
{
    /// <summary>Launches the sidecar for the whole game and delivers its events on the main thread.</summary>
    [DisallowMultipleComponent]
    public sealed class SidecarHost : MonoBehaviour
    {
        [Tooltip("The sidecar executable. Empty = StreamingAssets/game-sidecar/game-sidecar(.exe), the frozen build.")]
        [SerializeField] private string executablePath = "";

        [Tooltip("Optional sidecar.toml (model profiles); relative paths are under StreamingAssets.")]
        [SerializeField] private string configPath = "";

        [Tooltip("Keep sessions on disk (--state-dir) so they survive a sidecar crash or restart.")]
        [SerializeField] private bool persistState = true;

        [Tooltip("State folder. Empty = <persistentDataPath>/game-sidecar; relative paths are under Application.persistentDataPath.")]
        [SerializeField] private string stateDirectory = "";

        [Tooltip("Listen on TCP loopback instead of a Unix socket (always on Windows).")]
        [SerializeField] private bool listenTcp;

        [Tooltip("The sidecar's --log-level (Default: its own, info).")]
        [SerializeField] private SidecarLogLevel logLevel = SidecarLogLevel.Default;

        [Tooltip("Added to the sidecar's environment (e.g. a provider's API key variable). Values here are saved in the scene and ship in the build: set secrets from code (ConfigureEnvironment).")]
        [SerializeField] private List<EnvironmentVariable> environment = new List<EnvironmentVariable>();

        [Tooltip("Extra arguments after the ones the host makes.")]
        [SerializeField] private List<string> extraArguments = new List<string>();

        [SerializeField] private float handshakeTimeoutSeconds = 15f;

        [Tooltip("Copy the sidecar's warning and error log lines to the Unity console.")]
        [SerializeField] private bool forwardWarnings = true;

        [Tooltip("Relaunch the sidecar if it crashes or hangs (RestartPolicy). With a state folder, tracked sessions resume.")]
        [SerializeField] private bool restartOnCrash;

        [Tooltip("Restarts allowed within a minute before the host gives up (status Failed).")]
        [SerializeField] private int maxRestarts = 3;

        [Header("Events (main thread)")]
        [Tooltip("The sidecar has handshaken: Client is usable.")]
        [SerializeField] private UnityEvent onReady = new UnityEvent();
        [Tooltip("Each status change, by name: Ready, Restarting, Stopped, Failed.")]
        [SerializeField] private UnityEvent<string> onStatusChanged = new UnityEvent<string>();
        [Tooltip("A sidecar process ended: how (exit code or signal, requested or not, last stderr lines).")]
        [SerializeField] private UnityEvent<string> onExited = new UnityEvent<string>();
        [Tooltip("A restart brought the sidecar back: true when sessions were lost (resync them with ReplaceState).")]
        [SerializeField] private UnityEvent<bool> onRestarted = new UnityEvent<bool>();
        [Tooltip("The launch failed: why.")]
        [SerializeField] private UnityEvent<string> onLaunchFailed = new UnityEvent<string>();

        private SidecarProcess? _process;
        private CancellationTokenSource? _launching;
        private Task? _stopping;
        private bool _refused;

        /// <summary>The game's one host (the first enabled; later ones are refused); null before one woke.</summary>
        public static SidecarHost? Instance { get; private set; }

        /// <summary>
        /// Makes the HTTP/2 handler for the sidecar's socket. Unity's own HttpClient has no cleartext HTTP/2, so
        /// set this before the host is enabled, e.g. to Cysharp's YetAnotherHttpHandler with Http2Only and
        /// UnixDomainSocketPath (docs/unity.md). Without it the launch fails before the sidecar starts.
        /// </summary>
        public static Func<Handshake, HttpMessageHandler>? HttpHandlerFactory { get; set; }

        /// <summary>Code's say on the sidecar's environment, after the Inspector's list: add provider API keys read
        /// from a safe place, override or remove entries. Set it before the host is enabled.</summary>
        public static Action<IDictionary<string, string>>? ConfigureEnvironment { get; set; }

        /// <summary>Delivers run events on the main thread (Unity's SynchronizationContext).</summary>
        public MainThreadDispatcher Dispatcher { get; private set; } = new MainThreadDispatcher();

        /// <summary>The connected client; null until <see cref="Ready"/>.</summary>
        public SidecarClient? Client => _process?.Client;

        /// <summary>True while the sidecar serves: false before the launch, after it ended, and while it restarts.</summary>
        public bool IsReady => _process != null && _process.Status == SidecarStatus.Ready;

        /// <summary>The sidecar's status; null before the first launch succeeded.</summary>
        public SidecarStatus? Status => _process?.Status;

        /// <summary>The state folder the sidecar was given (--state-dir), or null without one.</summary>
        public string? StateFolder { get; private set; }

        /// <summary>Raised on the main thread once the sidecar has handshaken.</summary>
        public event Action<SidecarHost>? Ready;

        /// <summary>Raised on the main thread on each status change (Ready, Restarting, Stopped, Failed).</summary>
        public event Action<SidecarStatus>? StatusChanged;

        /// <summary>Raised on the main thread each time a sidecar process ends (how: SidecarExit; requested or not).</summary>
        public event Action<SidecarExit>? Exited;

        /// <summary>Raised on the main thread after a restart (restartOnCrash): whether sessions were lost
        /// (resync them with ReplaceState) and what became of unacknowledged batches.</summary>
        public event Action<RestartOutcome>? Restarted;

        /// <summary>Raised on the main thread when the launch failed (a SidecarLaunchException says why).</summary>
        public event Action<Exception>? LaunchFailed;

        private void Awake()
        {
            if (Instance != null && Instance != this)
            {
                // One sidecar per game: a scene loaded again (or a second host) must not launch another one.
                _refused = true;
                Debug.LogWarning($"SidecarHost on '{name}' refused: the game already has one (on '{Instance.name}'); destroying this one.");
                Destroy(this);
                return;
            }
            Instance = this;
            // Only a root object can survive scene loads: the host's whole root comes along.
            DontDestroyOnLoad(transform.root.gameObject);
            Application.quitting += OnQuitting;
            // Captured on the main thread: Unity's UnitySynchronizationContext. Without one (a
            // custom player loop), events queue up and Update drains them.
            var context = SynchronizationContext.Current;
            Dispatcher = context != null ? new MainThreadDispatcher(context) : new MainThreadDispatcher();
        }

        private void OnDestroy()
        {
            if (_refused || Instance != this) return;
            Application.quitting -= OnQuitting;
            Instance = null;
        }

        private async void OnEnable()
        {
            if (_refused) return;
            _launching = new CancellationTokenSource();
            try
            {
                // Re-enabled while the last sidecar still stops: let it release the state folder's lock first
                // (awaited, so the main thread is not held).
                var stopping = _stopping;
                if (stopping != null) await Task.WhenAny(stopping);
                if (!isActiveAndEnabled || _launching.IsCancellationRequested) return;
                var warnings = new List<string>();
                var options = BuildOptions(warnings);
                foreach (var warning in warnings) Debug.LogWarning("SidecarHost: " + warning);
                // Awaited without ConfigureAwait(false): the code after it runs on the main thread.
                var process = await SidecarProcess.LaunchAsync(options, _launching.Token);
                if (!isActiveAndEnabled)
                {
                    _ = SidecarHostPlan.StopInBackground(process);
                    return;
                }
                _process = process;
                // The process raises these on a thread-pool thread: hand them to the main thread.
                var dispatcher = Dispatcher;
                process.StatusChanged += status => dispatcher.Post(() => OnStatusChanged(status));
                process.ProcessExited += exit => dispatcher.Post(() => OnProcessExited(exit));
                process.Restarted += outcome => dispatcher.Post(() => OnRestarted(outcome));
                Ready?.Invoke(this);
                onReady.Invoke();
            }
            catch (OperationCanceledException)
            {
                // Disabled while launching.
            }
            catch (SidecarLaunchException e)
            {
                Debug.LogError("game-sidecar did not start: " + e.Message);
                LaunchFailed?.Invoke(e);
                onLaunchFailed.Invoke(e.Message);
            }
        }

        private void OnStatusChanged(SidecarStatus status)
        {
            StatusChanged?.Invoke(status);
            onStatusChanged.Invoke(status.ToString());
        }

        private void OnProcessExited(SidecarExit exit)
        {
            if (!exit.Requested) Debug.LogError("game-sidecar ended: " + exit);
            Exited?.Invoke(exit);
            onExited.Invoke(exit.ToString());
        }

        private void OnRestarted(RestartOutcome outcome)
        {
            Restarted?.Invoke(outcome);
            onRestarted.Invoke(outcome.SessionsLost);
        }

        private void Update()
        {
            if (!_refused && Dispatcher.UsesQueue) Dispatcher.Drain();
        }

        // Disabled (or destroyed) while the game goes on: the stop runs on the thread pool, the frame is not held.
        private void OnDisable()
        {
            var process = Detach();
            if (process != null) _stopping = SidecarHostPlan.StopInBackground(process);
        }

        // Quitting: nothing runs after this, so wait for the stop, briefly (SidecarHostPlan.QuitWait). A sidecar
        // still alive then exits on its own when the game process ends and its stdin pipe closes.
        private void OnQuitting()
        {
            var process = Detach();
            if (process != null) SidecarHostPlan.StopBounded(process);
        }

        private SidecarProcess? Detach()
        {
            _launching?.Cancel();
            var process = _process;
            _process = null;
            return process;
        }

        /// <summary>Streams a run; <paramref name="onEvent"/> and <paramref name="onEnd"/> run on the main thread.</summary>
        public Task Run(RunRequest request, Action<RunEvent> onEvent, Action<Exception?> onEnd,
            CancellationToken cancellationToken = default)
        {
            var client = Client ?? throw new InvalidOperationException("the sidecar is not ready yet (wait for Ready)");
            return Dispatcher.Pump(client.Run(request, cancellationToken), onEvent, onEnd, cancellationToken);
        }

        private SidecarProcessOptions BuildOptions(List<string> warnings)
        {
            var plan = new SidecarHostPlan
            {
                StreamingAssetsPath = Application.streamingAssetsPath,
                PersistentDataPath = Application.persistentDataPath,
                IsWindows = RuntimeInformation.IsOSPlatform(OSPlatform.Windows),
                ExecutablePath = executablePath,
                ConfigPath = configPath,
                PersistState = persistState,
                StateDirectory = stateDirectory,
                ListenTcp = listenTcp,
                LogLevel = logLevel,
                Environment = environment,
                ExtraArguments = extraArguments,
                ConfigureEnvironment = ConfigureEnvironment,
            };
            var options = plan.ToOptions(warnings);
            StateFolder = plan.StateFolder();
            var dispatcher = Dispatcher;
            options.HandshakeTimeout = TimeSpan.FromSeconds(handshakeTimeoutSeconds);
            // Log lines arrive on a reader thread: hand them to the main thread before Debug.*.
            options.OnLog = forwardWarnings ? line => ForwardLog(dispatcher, line) : (Action<string>?)null;
            options.Client = new SidecarClientOptions { HttpHandlerFactory = HttpHandlerFactory };
            options.RestartPolicy = restartOnCrash ? new RestartPolicy { MaxRestarts = Math.Max(1, maxRestarts) } : null;
            return options;
        }

        private static void ForwardLog(MainThreadDispatcher dispatcher, string line)
        {
            if (line.Contains("\"level\": \"error\"") || line.Contains("\"level\":\"error\""))
                dispatcher.Post(() => Debug.LogError("[game-sidecar] " + line));
            else if (line.Contains("\"level\": \"warning\"") || line.Contains("\"level\":\"warning\""))
                dispatcher.Post(() => Debug.LogWarning("[game-sidecar] " + line));
        }
    }
}
