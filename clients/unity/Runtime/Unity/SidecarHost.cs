// The Unity face of the sidecar: launches it when enabled, stops it on disable and
// quit, and hands run events to the main thread. Everything that can be tested
// lives in GameSidecar.Client (SidecarProcess, SidecarClient, MainThreadDispatcher);
// this stays a thin shell over it.
#nullable enable
using System;
using System.Collections.Generic;
using System.IO;
using System.Net.Http;
using System.Runtime.InteropServices;
using System.Threading;
using System.Threading.Tasks;
using GameSidecar.Client;
using GameSidecar.V1;
using UnityEngine;

namespace GameSidecar.Unity
{
    [DisallowMultipleComponent]
    public sealed class SidecarHost : MonoBehaviour
    {
        [Tooltip("The sidecar executable. Empty = StreamingAssets/game-sidecar/game-sidecar(.exe), the frozen build.")]
        [SerializeField] private string executablePath = "";

        [Tooltip("Optional sidecar.toml (model profiles); relative paths are under StreamingAssets.")]
        [SerializeField] private string configPath = "";

        [Tooltip("Optional folder for durable session state (--state-dir).")]
        [SerializeField] private string stateDirectory = "";

        [Tooltip("Listen on TCP loopback instead of a Unix socket (always on Windows).")]
        [SerializeField] private bool listenTcp;

        [SerializeField] private float handshakeTimeoutSeconds = 15f;

        [Tooltip("Copy the sidecar's warning and error log lines to the Unity console.")]
        [SerializeField] private bool forwardWarnings = true;

        [Tooltip("Relaunch the sidecar if it crashes or hangs (RestartPolicy). With a state directory, tracked sessions resume.")]
        [SerializeField] private bool restartOnCrash;

        [Tooltip("Restarts allowed within a minute before the host gives up (status Failed).")]
        [SerializeField] private int maxRestarts = 3;

        private SidecarProcess? _process;
        private CancellationTokenSource? _launching;

        /// <summary>
        /// Makes the HTTP/2 handler for the sidecar's socket. Unity's own HttpClient has no
        /// cleartext HTTP/2, so set this before the host is enabled, e.g. to Cysharp's
        /// YetAnotherHttpHandler with Http2Only and UnixDomainSocketPath (docs/unity.md).
        /// </summary>
        public static Func<Handshake, HttpMessageHandler>? HttpHandlerFactory { get; set; }

        /// <summary>Delivers run events on the main thread (Unity's SynchronizationContext).</summary>
        public MainThreadDispatcher Dispatcher { get; private set; } = new MainThreadDispatcher();

        /// <summary>The connected client; null until <see cref="Ready"/>.</summary>
        public SidecarClient? Client => _process?.Client;

        /// <summary>True while the sidecar serves: false before the launch, after it ended, and while it restarts.</summary>
        public bool IsReady => _process != null && _process.Status == SidecarStatus.Ready;

        /// <summary>The sidecar's status; null before the first launch succeeded.</summary>
        public SidecarStatus? Status => _process?.Status;

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
            // Captured on the main thread: Unity's UnitySynchronizationContext. Without one (a
            // custom player loop), events queue up and Update drains them.
            var context = SynchronizationContext.Current;
            Dispatcher = context != null ? new MainThreadDispatcher(context) : new MainThreadDispatcher();
        }

        private async void OnEnable()
        {
            _launching = new CancellationTokenSource();
            try
            {
                // Awaited without ConfigureAwait(false): the code after it runs on the main thread.
                var process = await SidecarProcess.LaunchAsync(BuildOptions(), _launching.Token);
                if (!isActiveAndEnabled)
                {
                    await process.DisposeAsync();
                    return;
                }
                _process = process;
                // The process raises these on a thread-pool thread: hand them to the main thread.
                var dispatcher = Dispatcher;
                process.StatusChanged += status => dispatcher.Post(() => StatusChanged?.Invoke(status));
                process.ProcessExited += exit => dispatcher.Post(() => OnProcessExited(exit));
                process.Restarted += outcome => dispatcher.Post(() => Restarted?.Invoke(outcome));
                Ready?.Invoke(this);
            }
            catch (OperationCanceledException)
            {
                // Disabled while launching.
            }
            catch (SidecarLaunchException e)
            {
                Debug.LogError("game-sidecar did not start: " + e.Message);
                LaunchFailed?.Invoke(e);
            }
        }

        private void OnProcessExited(SidecarExit exit)
        {
            if (!exit.Requested) Debug.LogError("game-sidecar ended: " + exit);
            Exited?.Invoke(exit);
        }

        private void Update()
        {
            if (Dispatcher.UsesQueue) Dispatcher.Drain();
        }

        private void OnDisable() => Stop();

        private void OnApplicationQuit() => Stop();

        /// <summary>Streams a run; <paramref name="onEvent"/> and <paramref name="onEnd"/> run on the main thread.</summary>
        public Task Run(RunRequest request, Action<RunEvent> onEvent, Action<Exception?> onEnd,
            CancellationToken cancellationToken = default)
        {
            var client = Client ?? throw new InvalidOperationException("the sidecar is not ready yet (wait for Ready)");
            return Dispatcher.Pump(client.Run(request, cancellationToken), onEvent, onEnd, cancellationToken);
        }

        private void Stop()
        {
            _launching?.Cancel();
            var process = _process;
            _process = null;
            if (process == null) return;
            // Bounded: StopAsync never needs the main thread (ConfigureAwait(false) inside), and if
            // the wait runs out the sidecar still exits on stdin EOF when the game does.
            process.StopAsync().Wait(TimeSpan.FromSeconds(3));
        }

        private SidecarProcessOptions BuildOptions()
        {
            var windows = RuntimeInformation.IsOSPlatform(OSPlatform.Windows);
            var exe = string.IsNullOrEmpty(executablePath)
                ? Path.Combine(Application.streamingAssetsPath, "game-sidecar", windows ? "game-sidecar.exe" : "game-sidecar")
                : executablePath;
            var args = new List<string> { "serve" };
            if (listenTcp || windows) args.AddRange(new[] { "--listen", "tcp://127.0.0.1:0" });
            if (!string.IsNullOrEmpty(configPath))
                args.AddRange(new[] { "--config", Path.Combine(Application.streamingAssetsPath, configPath) });
            if (!string.IsNullOrEmpty(stateDirectory)) args.AddRange(new[] { "--state-dir", stateDirectory });
            var dispatcher = Dispatcher;
            return new SidecarProcessOptions
            {
                Executable = exe,
                Arguments = args,
                HandshakeTimeout = TimeSpan.FromSeconds(handshakeTimeoutSeconds),
                // Log lines arrive on a reader thread: hand them to the main thread before Debug.*.
                OnLog = forwardWarnings ? line => ForwardLog(dispatcher, line) : (Action<string>?)null,
                Client = new SidecarClientOptions { HttpHandlerFactory = HttpHandlerFactory },
                RestartPolicy = restartOnCrash ? new RestartPolicy { MaxRestarts = Math.Max(1, maxRestarts) } : null,
            };
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
