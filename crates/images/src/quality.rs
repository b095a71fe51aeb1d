//! Resolution and aspect scores and the weighted per-image quality Q (METRICS.md
//! section 4). Pure functions of numbers.

use serde::{Deserialize, Serialize};

/// Short side at which the resolution score saturates.
pub const RESOLUTION_SATURATION_PX: f64 = 400.0;

/// R = min(1, min(w, h) / 400).
pub fn resolution_score(width: u32, height: u32) -> f64 {
    (f64::from(width.min(height)) / RESOLUTION_SATURATION_PX).min(1.0)
}

/// A with a = long / short side: 1 up to 2, linear to 0.5 at 4, then down to 0 at 8.
pub fn aspect_score(width: u32, height: u32) -> f64 {
    let (long, short) = (width.max(height), width.min(height));
    if short == 0 {
        return 0.0;
    }
    let a = f64::from(long) / f64::from(short);
    if a <= 2.0 {
        1.0
    } else if a <= 4.0 {
        1.0 - (a - 2.0) / 4.0
    } else {
        (0.5 - (a - 4.0) / 8.0).max(0.0)
    }
}

/// Weights of the four components of Q. The paper's were fitted to expert ratings;
/// ablations may re-weight.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct QualityWeights {
    pub resolution: f64,
    pub aspect: f64,
    pub sharpness: f64,
    pub contrast: f64,
}

impl QualityWeights {
    /// 0.25 R + 0.15 A + 0.35 S + 0.25 C.
    pub const fn paper() -> Self {
        Self {
            resolution: 0.25,
            aspect: 0.15,
            sharpness: 0.35,
            contrast: 0.25,
        }
    }
}

impl Default for QualityWeights {
    fn default() -> Self {
        Self::paper()
    }
}

/// The four component scores of one image, each in [0, 1].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct QualityComponents {
    pub resolution: f64,
    pub aspect: f64,
    pub sharpness: f64,
    pub contrast: f64,
}

impl QualityComponents {
    pub fn quality(&self, w: &QualityWeights) -> f64 {
        w.resolution * self.resolution
            + w.aspect * self.aspect
            + w.sharpness * self.sharpness
            + w.contrast * self.contrast
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolution_saturates_at_400() {
        assert_eq!(resolution_score(1000, 400), 1.0);
        assert_eq!(resolution_score(5000, 5000), 1.0);
        assert_eq!(resolution_score(399, 1000), 399.0 / 400.0);
        assert_eq!(resolution_score(1000, 200), 0.5);
    }

    #[test]
    fn aspect_breakpoints() {
        assert_eq!(aspect_score(200, 100), 1.0);
        assert_eq!(aspect_score(100, 200), 1.0);
        assert_eq!(aspect_score(300, 100), 0.75);
        assert_eq!(aspect_score(400, 100), 0.5);
        assert_eq!(aspect_score(600, 100), 0.25);
        assert_eq!(aspect_score(800, 100), 0.0);
        assert_eq!(aspect_score(2000, 100), 0.0);
        // Continuity around 2 and 4.
        assert!((aspect_score(2001, 1000) - 1.0).abs() < 1e-3);
        assert!((aspect_score(4001, 1000) - 0.5).abs() < 1e-3);
    }

    #[test]
    fn paper_weights_sum_to_one() {
        let w = QualityWeights::paper();
        let all = QualityComponents {
            resolution: 1.0,
            aspect: 1.0,
            sharpness: 1.0,
            contrast: 1.0,
        };
        assert!((all.quality(&w) - 1.0).abs() < 1e-12);
        let only_s = QualityComponents {
            resolution: 0.0,
            aspect: 0.0,
            sharpness: 1.0,
            contrast: 0.0,
        };
        assert_eq!(only_s.quality(&w), 0.35);
    }
}
