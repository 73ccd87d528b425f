#nullable enable
// Ships the sidecar inside the player build: before a build, checks that a sidecar
// folder is configured for its target (stopping the build with the fix named when
// not); after it, copies that folder to the player's StreamingAssets/game-sidecar/.
// The decisions are in SidecarBuildFolders (Unity-free, tested by the xunit suite).
using System;
using System.IO;
using UnityEditor;
using UnityEditor.Build;
using UnityEditor.Build.Reporting;
using UnityEngine;

namespace GameSidecar.Editor
{
    /// <summary>The build callbacks that put the sidecar folder into desktop player builds.</summary>
    public sealed class SidecarBuildStep : IPreprocessBuildWithReport, IPostprocessBuildWithReport
    {
        /// <summary>Late, so a project's own steps that write the folder run first.</summary>
        public int callbackOrder => 1000;

        /// <summary>Stops the build when no usable sidecar folder is configured for its target.</summary>
        public void OnPreprocessBuild(BuildReport report)
        {
            try
            {
                SidecarBuildFolders.SourceFor(ProjectRoot, report.summary.platform.ToString(), Environment.GetEnvironmentVariables());
            }
            catch (SidecarBuildException e)
            {
                throw new BuildFailedException(e.Message);
            }
        }

        /// <summary>Copies the sidecar folder into the finished player.</summary>
        public void OnPostprocessBuild(BuildReport report)
        {
            var target = report.summary.platform.ToString();
            try
            {
                var to = SidecarBuildFolders.CopyInto(ProjectRoot, target, report.summary.outputPath, Environment.GetEnvironmentVariables());
                Debug.Log($"game-sidecar: copied the sidecar for {target} to {to}");
            }
            catch (Exception e) when (e is SidecarBuildException || e is IOException || e is UnauthorizedAccessException)
            {
                throw new BuildFailedException($"game-sidecar: could not copy the sidecar into the build: {e.Message}");
            }
        }

        private static string ProjectRoot => Path.GetDirectoryName(Application.dataPath) ?? ".";
    }
}
