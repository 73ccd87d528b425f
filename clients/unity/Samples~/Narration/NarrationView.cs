// Sample: a UI Text that fills with streamed narration. Every event arrives on the
// main thread through SidecarHost.Run, so touching the Text is safe; a sentence
// end gets a mark (where a TTS voice could speak the sentence).
#nullable enable
using System;
using System.Threading;
using GameSidecar.Client;
using GameSidecar.V1;
using UnityEngine;
using UnityEngine.UI;

namespace GameSidecar.Unity.Samples
{
    public sealed class NarrationView : MonoBehaviour
    {
        [SerializeField] private SidecarHost? host;
        [SerializeField] private Text? output;
        [SerializeField] private string sessionId = "main";
        [Tooltip("Appended after each sentence end.")]
        [SerializeField] private string sentenceMark = "\n";
        [Tooltip("Narrated once the session is open (empty = wait for a Narrate call).")]
        [SerializeField] private string firstLine = "";

        private CancellationTokenSource? _run;
        private bool _sessionOpen;

        /// <summary>Raised on the main thread with each finished sentence's last piece.</summary>
        public event Action<string>? SentenceEnded;

        private void OnEnable()
        {
            // A scene loaded again brings its own host, which is refused (the game's first one lives on):
            // use the game's host then.
            if (host == null) host = SidecarHost.Instance;
            if (host == null) return;
            host.Ready += OpenSession;
            if (host.IsReady) OpenSession(host);
        }

        private void OnDisable()
        {
            if (host != null) host.Ready -= OpenSession;
            _run?.Cancel(); // closes the model call upstream
        }

        private async void OpenSession(SidecarHost ready)
        {
            try
            {
                await ready.Client!.OpenSessionAsync(sessionId);
                _sessionOpen = true;
                if (!string.IsNullOrEmpty(firstLine)) Narrate(firstLine);
            }
            catch (SidecarException e)
            {
                Debug.LogError("OpenSession failed: " + e.Message);
            }
        }

        /// <summary>Narrates <paramref name="text"/> (e.g. from a UI button); a run still streaming is cancelled.</summary>
        public void Narrate(string text)
        {
            if (host == null || output == null || !host.IsReady || !_sessionOpen)
            {
                Debug.LogWarning("NarrationView: the sidecar is not ready yet");
                return;
            }
            _run?.Cancel();
            _run = new CancellationTokenSource();
            output.text = "";
            var request = new RunRequest { SessionId = sessionId, Narrate = new NarrateInput { Text = text } };
            _ = host.Run(request, OnEvent, OnEnd, _run.Token);
        }

        private void OnEvent(RunEvent e)
        {
            if (e.KindCase != RunEvent.KindOneofCase.Text || output == null) return;
            output.text += e.Text.Text;
            if (!e.Text.SentenceEnd) return;
            output.text += sentenceMark;
            SentenceEnded?.Invoke(e.Text.Text);
        }

        private void OnEnd(Exception? error)
        {
            if (error is SidecarException e && output != null) output.text += $"\n[{e.ReasonName}: {e.Detail}]";
        }
    }
}
